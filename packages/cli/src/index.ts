/**
 * @packageDocumentation
 * The `agent-ledger` command-line tool: inspect, verify and transform agent-ledger session
 * logs without writing code. `runCli` is the whole program; the `agent-ledger` bin calls it.
 */
export { runCli } from './run-cli.ts'
export type { CliIo } from './run-cli.ts'
