import { readFileSync } from 'node:fs'

import { parseCommandArgs } from './args.ts'
import type { CommandSpec, ParsedArgs } from './args.ts'
import { CliError, CliErrorCode, ExitCode } from './cli-error.ts'
import { catCommand } from './commands/cat.ts'
import { compactCommand } from './commands/compact.ts'
import { copyCommand } from './commands/copy.ts'
import { dbCommand } from './commands/db.ts'
import { exportCommand } from './commands/export.ts'
import { forkCommand } from './commands/fork.ts'
import { importCommand } from './commands/import.ts'
import { inspectCommand } from './commands/inspect.ts'
import { listCommand } from './commands/list.ts'
import { messagesCommand } from './commands/messages.ts'
import { compressCommand, migrateCommand } from './commands/convert.ts'
import { pruneCommand } from './commands/prune.ts'
import { rekeyCommand } from './commands/rekey.ts'
import { salvageCommand } from './commands/salvage.ts'
import { searchCommand } from './commands/search.ts'
import { serveCommand } from './commands/serve.ts'
import { statsCommand } from './commands/stats.ts'
import { tailCommand } from './commands/tail.ts'
import { verifyCommand } from './commands/verify.ts'
import { CommandContext } from './context.ts'
import { processIo } from './io.ts'
import type { CliIo } from './io.ts'
import { exitCodeOf } from './report-error.ts'
import { locationNotes } from './session-path.ts'
import { resolveTarget } from './store-target.ts'
import { STDIN_ARGUMENT, stdinSession } from './stdin-session.ts'
import { nearest } from './suggest.ts'

/** Every command, in the order `--help` lists them. */
const COMMANDS: readonly CommandSpec[] = [
  verifyCommand,
  inspectCommand,
  catCommand,
  tailCommand,
  messagesCommand,
  forkCommand,
  compactCommand,
  salvageCommand,
  migrateCommand,
  compressCommand,
  exportCommand,
  listCommand,
  searchCommand,
  importCommand,
  statsCommand,
  copyCommand,
  pruneCommand,
  rekeyCommand,
  dbCommand,
  serveCommand,
]

function version(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: unknown
    }
    return typeof manifest.version === 'string' ? manifest.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length))
  return `agent-ledger: inspect, verify and transform agent-ledger session logs

Usage: agent-ledger <command> [options]
       agent-ledger <command> --help

<session> is a session directory (its parent is the store root, its name the session
id) or a log file inside one; <root> is a store root (a directory of sessions).
With --store <dir|postgres://...> (or AGENT_LEDGER_STORE), <session> is a session id in
that store and <root> is left out; a PostgreSQL URL's password is never printed.

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join('\n')}

Common options: --json (machine output on stdout), --no-progress (long operations print
progress on stderr every second otherwise), -h/--help.

Errors are one line on stderr naming the code, the file and what is wrong:
  agent-ledger: SEQ_GAP in sessions/a1/session.v4.jsonl line 12 (offset 4096): ...

Exit codes (every command):
  0  ok (a torn tail alone is a warning, not a failure; see verify --help)
  1  damage found, or a refusal because of the session's state (VERSION_TOO_NEW,
     SESSION_LOCKED, FORK_REFUSED, BAD_COMPACTION_RANGE, ...)
  2  usage or I/O error (bad arguments, no such session, permission denied, ...)

agent-ledger ${version()}
`
}

function unknownCommand(name: string): string {
  const names = COMMANDS.map((candidate) => candidate.name)
  const suggestion = name.startsWith('-') ? undefined : nearest(name, names)
  const shown = JSON.stringify(name)
  return suggestion === undefined
    ? `unknown command ${shown}: expected one of ${names.join(', ')}; run agent-ledger --help`
    : `unknown command ${shown}; did you mean "${suggestion}"? (run agent-ledger --help for all commands)`
}

/** The commands whose `<session>` may be `-`, for messages and `--help`. */
const STDIN_COMMANDS = COMMANDS.filter((command) => command.stdin === true).map((command) => command.name)

/** `-` given to a command that cannot read its session from standard input, or with `--store`. */
function refuseStdin(command: CommandSpec, args: ParsedArgs): void {
  const why =
    command.stdin !== true
      ? `${command.name} ${command.writes === true ? 'writes to its session' : 'needs the session on disk'}`
      : args.values['store'] !== undefined
        ? `with --store, <session> is a session id in that store`
        : null
  if (why === null) return
  throw new CliError({
    code: CliErrorCode.STDIN_REFUSED,
    message: `${command.name}: expected a session directory, found "-" (standard input): ${why}; "-" is read by ${STDIN_COMMANDS.join(', ')}`,
    details: { command: command.name },
  })
}

/**
 * Runs the `agent-ledger` command line with `argv` (the arguments after the program name).
 *
 * Never throws and never calls `process.exit`: every failure becomes one line on
 * `io.stderr` (plus, with `--json`, an `{"error": ...}` document on `io.stdout` for
 * commands that print one document) and an exit code.
 *
 * @param argv - The arguments, e.g. `['verify', 'sessions/a1', '--json']`.
 * @param io - Where output goes, and the environment (working directory, abort signal for
 *   `tail -f`, clocks). Default: the process's streams.
 * @returns The exit code: 0 success, 1 damage or refusal found, 2 usage or I/O error.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const context = new CommandContext(io)
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((command) => command.name === rest[0]) : undefined
    io.stdout(topic === undefined ? globalHelp() : topic.help)
    return ExitCode.OK
  }
  if (name === '--version' || name === '-v' || name === '-V') {
    io.stdout(`${version()}\n`)
    return ExitCode.OK
  }
  const command = COMMANDS.find((candidate) => candidate.name === name)
  if (command === undefined) {
    await context.reportError(
      new CliError({
        code: CliErrorCode.USAGE,
        message: unknownCommand(name),
      }),
      false,
    )
    return ExitCode.USAGE
  }
  const json = rest.includes('--json')
  let pager: { end(): Promise<void> } | null = null
  let stdinCleanup: (() => Promise<void>) | null = null
  try {
    const parsed = parseCommandArgs(command, rest)
    if (parsed === 'help') {
      io.stdout(command.help)
      return ExitCode.OK
    }
    let args = parsed
    if (args.positionals[0] === STDIN_ARGUMENT && command.positionals[0]?.startsWith('<session') === true) {
      refuseStdin(command, args)
      const session = await stdinSession(io.stdin ?? process.stdin)
      stdinCleanup = session.cleanup
      args = { ...args, positionals: [session.directory, ...args.positionals.slice(1)] }
    }
    if (args.values['no-progress'] === true) context.progressEnabled = false
    if (command.pages?.(args) === true && args.values['no-pager'] !== true) {
      pager = io.startPager?.(context.env) ?? null
    }
    context.writes = command.writes === true
    if (command.positionals[0] === '<session>') {
      const target = await resolveTarget(context, args)
      if (target.location !== null) {
        for (const note of locationNotes(target.location)) context.notice('note', note)
      }
    }
    const code = await command.run(context, args)
    await context.out.flush()
    return code
  } catch (error) {
    await context.reportError(error, json && command.streams !== true)
    return exitCodeOf(error)
  } finally {
    context.io.endStatus()
    await pager?.end()
    await context.closeStores()
    await stdinCleanup?.()
  }
}
