/** Where the CLI writes; injected so tests and embedding harnesses can capture output. */
export interface CliIo {
  stdout(text: string): void
  stderr(text: string): void
}

const defaultIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}

const HELP = `agent-ledger: inspect and verify agent-ledger session logs

Usage: agent-ledger <command> [options]

No commands are built yet in this version; they arrive with the CLI issue.
`

/**
 * Runs the CLI with `argv` (without the node and script names).
 *
 * @returns The process exit code: 0 success, 1 damage found, 2 usage or I/O error.
 */
export function runCli(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') {
    io.stdout(HELP)
    return Promise.resolve(0)
  }
  io.stderr(`agent-ledger: unknown command ${JSON.stringify(argv[0])}; run agent-ledger --help\n`)
  return Promise.resolve(2)
}
