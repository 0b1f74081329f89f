import { isAbsolute, join } from 'node:path'

import { ProjectionError } from '@agent-ledger/session-projection'
import { SessionStoreError, SessionStoreErrorCode as Code } from '@agent-ledger/session-store'

import { CliError, ExitCode } from './cli-error.ts'
import { displayPath } from './session-path.ts'
import { terminalSafe } from './terminal-text.ts'

/**
 * Codes that mean "the session's data or state refuses this" (exit 1), not a usage or I/O
 * problem (exit 2): the core's, and the backends' own codes that reach the caller unchanged
 * through the port (the JSONL backend's by name).
 */
const DAMAGE_OR_REFUSAL: ReadonlySet<string> = new Set([
  Code.CORRUPT_LINE,
  Code.SEQ_GAP,
  Code.SEQ_DUPLICATE,
  Code.SEQ_CONFLICT,
  Code.INVALID_EVENT,
  Code.UNKNOWN_EVENT_TYPE,
  Code.LINE_TOO_LARGE,
  Code.TOO_DEEP,
  Code.INVALID_HEADER,
  Code.VERSION_TOO_NEW,
  Code.SESSION_LOCKED,
  Code.FORK_REFUSED,
  Code.FENCED,
  Code.INVALID_SEED,
  Code.HEADER_ID_MISMATCH,
  // The JSONL backend: links, generations and zstd.
  'HARDLINK_REFUSED',
  'SYMLINK_REFUSED',
  'GENERATION_FORK',
  'CORRUPT_FRAME',
  'DECOMPRESSION_LIMIT',
  'WINDOW_TOO_LARGE',
  'MIXED_ENCODINGS',
  'GENERATION_VERSION_MISMATCH',
  'NO_MIGRATION_PATH',
  'MIGRATION_CONFLICT',
  // Issue 10: a special file where a log or lock should be; quarantine files to inspect first.
  'NOT_REGULAR_FILE',
  'QUARANTINE_FULL',
  // @agent-ledger/import: the source refuses the import.
  'UNRECOGNIZED_FORMAT',
  'MALFORMED_LINE',
  'TORN_LINE',
  'UNSTORABLE_RECORD',
  'INVALID_RECORD',
  'EMPTY_SOURCE',
  'DIVERGED',
  'INVALID_IMPORT',
  // copy: the target holds another session under that id, or reads back differently.
  'TARGET_EXISTS',
  'COPY_MISMATCH',
])

/** Errnos that mean a full disk: printed as the store's DISK_FULL, never as raw `ENOSPC: ...` text. */
const DISK_FULL_ERRNOS: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EFBIG'])

/** Where store errors' relative `file` names are rooted, and the working directory for display. */
export interface ErrorContext {
  readonly root: string | null
  readonly cwd: string
}

/** A store error, a projection error or a CLI error as plain JSON for `--json` output. */
export interface ErrorJson {
  readonly code: string
  readonly message: string
  readonly file?: string
  readonly line?: number
  readonly offset?: number
  readonly seq?: number
  readonly lastGoodSeq?: number
  readonly details?: Readonly<Record<string, unknown>>
}

/**
 * The exit code for an error thrown by a command.
 *
 * @param error - Anything thrown.
 * @returns 1 for damage and refusals, 2 for usage and I/O errors.
 */
export function exitCodeOf(error: unknown): ExitCode {
  if (CliError.is(error)) return error.exitCode
  if (ProjectionError.is(error)) return ExitCode.DAMAGE
  if (isCodedError(error)) return DAMAGE_OR_REFUSAL.has(error.code) ? ExitCode.DAMAGE : ExitCode.USAGE
  return ExitCode.USAGE
}

function isCodedError(error: unknown): error is Error & { code: string; file?: unknown } {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string'
}

/**
 * The path of a store error's `file` as the user should see it.
 *
 * @param file - The store's file name, relative to the root (or absolute, or empty).
 * @param context - The root and the working directory.
 * @returns A printable path, or null when the error names no file.
 */
export function shownFile(file: string, context: ErrorContext): string | null {
  if (file === '') return context.root === null ? null : displayPath(context.root, context.cwd)
  if (isAbsolute(file)) return displayPath(file, context.cwd)
  if (context.root === null) return file
  return displayPath(join(context.root, file), context.cwd)
}

/**
 * Removes the location lead of a store message when the one-line format says it already:
 * the core's `Session a1 is damaged at a1/session.v4.jsonl line 12 (byte offset 4096): `
 * and the JSONL backend's `Line 12 of a1/session.v4.jsonl (byte offset 4096) is damaged: `
 * (after the port's `Cannot <action>: `, which is kept).
 */
function withoutLocationLead(message: string): string {
  return message
    .replace(
      /^(Cannot [^:]*: )?(?:Session \S+ is damaged at [^:]+: |(?:Line \d+|The (?:header line|line \d+)) of \S+ (?:\(byte offset \d+\) )?(?:is damaged: )?)/,
      '$1',
    )
    .replace(/\.$/, '')
}

/**
 * Formats any error as ONE line naming the code, the file and what is wrong:
 * `agent-ledger: SEQ_GAP in sessions/a1/session.v4.jsonl line 12 (offset 4096): skips events: expected "seq" to be 10, found 12 [seq 12, last good seq 9]`.
 *
 * @param error - Anything thrown.
 * @param context - The root (for store errors' relative files) and the working directory.
 * @returns The line, with its `\n`.
 */
export function formatErrorLine(error: unknown, context: ErrorContext): string {
  return `agent-ledger: ${terminalSafe(describeError(error, context))}\n`
}

function describeError(error: unknown, context: ErrorContext): string {
  if (CliError.is(error)) return `${error.code}: ${error.message}`
  if (ProjectionError.is(error)) return `${error.code}: ${error.message}`
  if (SessionStoreError.is(error)) {
    const location = error.location
    const file = location?.file === undefined ? null : shownFile(location.file, context)
    let where = file === null ? '' : ` in ${file}`
    if (location?.line !== undefined) where += ` line ${location.line}`
    if (location?.offset !== undefined) where += ` (offset ${location.offset})`
    const facts: string[] = []
    if (error.seq !== undefined) facts.push(`seq ${error.seq}`)
    if (error.lastGoodSeq !== undefined) facts.push(`last good seq ${error.lastGoodSeq}`)
    const tail = facts.length === 0 ? '' : ` [${facts.join(', ')}]`
    const message = file === null ? error.message.replace(/\.$/, '') : withoutLocationLead(error.message)
    return `${error.code}${where}: ${message}${tail}`
  }
  if (isCodedError(error)) {
    const file = typeof error.file === 'string' ? shownFile(error.file, context) : null
    if (DISK_FULL_ERRNOS.has(error.code)) {
      const path = (error as { path?: unknown }).path
      const where = file ?? (typeof path === 'string' ? displayPath(path, context.cwd) : null)
      return `DISK_FULL${where === null ? '' : ` in ${where}`}: the disk or the file size limit is full (${error.code}); free space and retry`
    }
    return `${error.code}${file === null ? '' : ` in ${file}`}: ${error.message.replace(/\.$/, '')}`
  }
  if (error instanceof Error) return `INTERNAL_ERROR: ${error.message}`
  return `INTERNAL_ERROR: ${String(error)}`
}

/**
 * An error as JSON data for `--json` output: code, message, file (as displayed), location and details.
 *
 * @param error - Anything thrown.
 * @param context - The root and the working directory.
 * @returns Plain JSON data.
 */
export function errorJson(error: unknown, context: ErrorContext): ErrorJson {
  if (CliError.is(error)) {
    return {
      code: error.code,
      message: error.message,
      ...(error.path === undefined ? {} : { file: error.path }),
      details: error.details,
    }
  }
  if (ProjectionError.is(error)) {
    return {
      code: error.code,
      message: error.message,
      ...(error.seq === undefined ? {} : { seq: error.seq }),
      details: {
        ...(error.field === undefined ? {} : { field: error.field }),
        ...(error.expected === undefined ? {} : { expected: error.expected }),
        ...(error.found === undefined ? {} : { found: error.found }),
      },
    }
  }
  if (SessionStoreError.is(error)) {
    const location = error.location
    const file = location?.file === undefined ? null : shownFile(location.file, context)
    return {
      code: error.code,
      message: error.message,
      ...(file === null ? {} : { file }),
      ...(location?.line === undefined ? {} : { line: location.line }),
      ...(location?.offset === undefined ? {} : { offset: location.offset }),
      ...(error.seq === undefined ? {} : { seq: error.seq }),
      ...(error.lastGoodSeq === undefined ? {} : { lastGoodSeq: error.lastGoodSeq }),
      ...(error.details === undefined ? {} : { details: error.details }),
    }
  }
  if (isCodedError(error)) {
    if (DISK_FULL_ERRNOS.has(error.code)) {
      return { code: 'DISK_FULL', message: error.message, details: { cause: error.code } }
    }
    return { code: error.code, message: error.message }
  }
  return { code: 'INTERNAL_ERROR', message: error instanceof Error ? error.message : String(error) }
}
