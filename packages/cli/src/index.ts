/**
 * @packageDocumentation
 * The `agent-ledger` command-line tool: verify, inspect, cat, tail -f, messages, fork,
 * compact, salvage, migrate, compress, export and list agent-ledger session logs without
 * writing code. `runCli` is the whole program (the `agent-ledger` bin calls it), so a
 * harness can embed it with its own streams.
 */
export { runCli } from './run-cli.ts'
export type { CliIo } from './io.ts'
export { CliError, CliErrorCode, ExitCode } from './cli-error.ts'
export { describeEvent } from './describe-event.ts'
