import { AgentLedgerError } from '@agent-ledger/session-events'

/** The process exit codes of `agent-ledger`, the same for every command. */
export const ExitCode = {
  /** The command did what was asked and found nothing wrong. */
  OK: 0,
  /** The session is damaged, or the library refused the request because of the session's state (locked, too new, a refused fork or compaction). */
  DAMAGE: 1,
  /** A usage error (bad arguments, not a session) or an I/O error (missing file, permission, disk). */
  USAGE: 2,
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

/** Why the CLI itself refused a command (store errors keep the codes of the core and its backends). Branch on these, never on `message`. */
export const CliErrorCode = {
  /** The arguments do not match the command's usage. */
  USAGE: 'USAGE',
  /** The `<session>` or `<root>` argument does not name a session directory, a log file or a store root. */
  NOT_A_SESSION: 'NOT_A_SESSION',
  /** Reading an input or writing an output file failed (the errno is in `details.cause`). */
  IO_ERROR: 'IO_ERROR',
  /** `export -o FILE` found FILE already there and `--force` was not given; nothing was written. */
  OUTPUT_EXISTS: 'OUTPUT_EXISTS',
  /** The followed session's log was removed while `tail -f` ran. */
  FILE_GONE: 'FILE_GONE',
  /** The command works on JSONL session files only and was given a database store. */
  UNSUPPORTED_BACKEND: 'UNSUPPORTED_BACKEND',
  /** `copy` found the target session already there with other content; nothing was written. */
  TARGET_EXISTS: 'TARGET_EXISTS',
  /** `copy` read back the target and found it differs from the source (exit 1). */
  COPY_MISMATCH: 'COPY_MISMATCH',
  /** `cat --from N` / `--seq N` past the last event of the session (exit 1). */
  PAST_END: 'PAST_END',
  /** `-` (standard input) given as the session of a command that writes, or with `--store` (exit 2). */
  STDIN_REFUSED: 'STDIN_REFUSED',
  /** `import` was given a FIFO, socket or device: refused without reading it (the JSONL backend's code; exit 1). */
  NOT_REGULAR_FILE: 'NOT_REGULAR_FILE',
  /** `serve --host H` with H not a loopback address and no `--token`: refused before listening (exit 2). */
  TOKEN_REQUIRED: 'TOKEN_REQUIRED',
} as const
export type CliErrorCode = (typeof CliErrorCode)[keyof typeof CliErrorCode]

const brand = Symbol.for('@agent-ledger/cli/CliError')

/** Thrown inside the CLI for usage and environment problems; `runCli` turns it into one stderr line and exit code 2. */
export class CliError extends AgentLedgerError<CliErrorCode> {
  override readonly name = 'CliError'
  /** The file or directory concerned, as shown to the user, when there is one. */
  readonly path: string | undefined
  /** The exit code `runCli` returns for this error. */
  readonly exitCode: ExitCode
  readonly [brand] = true

  constructor(options: {
    code: CliErrorCode
    message: string
    path?: string | undefined
    exitCode?: ExitCode
    details?: Readonly<Record<string, unknown>>
    cause?: unknown
  }) {
    super({ code: options.code, message: options.message, details: options.details, cause: options.cause })
    this.path = options.path
    this.exitCode = options.exitCode ?? ExitCode.USAGE
  }

  /** True for a `CliError` from any copy of this package. */
  static override is(value: unknown): value is CliError {
    return typeof value === 'object' && value !== null && brand in value
  }
}

/**
 * A usage error naming what was expected and what was found.
 *
 * @param message - One sentence.
 * @returns The error (exit code 2).
 */
export function usageError(message: string): CliError {
  return new CliError({ code: CliErrorCode.USAGE, message })
}
