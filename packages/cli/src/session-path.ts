import { lstat, readdir } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path'

import { SESSION_ID_PATTERN } from '@agent-ledger/session-events'
import { LOG_FILE_NAME, LOG_FILE_PATTERN } from '@agent-ledger/session-store-jsonl'

import { CliError, CliErrorCode } from './cli-error.ts'

/** Where a `<session>` argument points: the store root, the session id and the files. */
export interface SessionLocation {
  /** The store root (absolute): the session directory's parent. */
  readonly root: string
  /** The session id: the session directory's name. */
  readonly id: string
  /** The session directory (absolute). */
  readonly directory: string
  /** The log the store reads (absolute): `<directory>/session.v4.jsonl`. */
  readonly logFile: string
  /** The canonical log files found in the directory (generations and encodings), by name. */
  readonly generations: readonly string[]
  /** The file the user named, when the argument was a file that is not the current log. */
  readonly namedFile: string | null
}

/**
 * A path as the user should see it: relative to the working directory when inside it, else absolute.
 *
 * @param path - An absolute path.
 * @param cwd - The working directory.
 * @returns The path to print.
 */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  if (rel === '') return '.'
  if (rel.startsWith('..') || isAbsolute(rel)) return path
  return rel
}

function errnoOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined
}

/**
 * A CLI error for an I/O failure on `path`.
 *
 * @param error - The errno error.
 * @param context - The displayed path and what was being done.
 * @returns The error (exit code 2).
 */
export function ioError(
  error: unknown,
  context: { readonly path: string; readonly doing: string },
): CliError {
  const errno = errnoOf(error) ?? 'EIO'
  const reason =
    errno === 'ENOENT'
      ? 'no such file or directory'
      : errno === 'EACCES' || errno === 'EPERM'
        ? 'permission denied'
        : errno === 'ENOTDIR'
          ? 'a path component is not a directory'
          : errno === 'ENOSPC'
            ? 'no space left on the device'
            : error instanceof Error
              ? error.message
              : String(error)
  return new CliError({
    code: CliErrorCode.IO_ERROR,
    message: `cannot ${context.doing} ${context.path}: ${reason} (${errno})`,
    path: context.path,
    details: { cause: errno },
    cause: error,
  })
}

async function logNamesIn(directory: string): Promise<string[]> {
  const names = await readdir(directory)
  return names.filter((name) => LOG_FILE_PATTERN.test(name)).sort()
}

/**
 * Resolves a `<session>` argument: a session directory, or a log file inside one.
 *
 * The session directory's parent is the store root and its name the session id.
 *
 * @param argument - The argument as typed.
 * @param cwd - The working directory.
 * @returns Where the session is.
 * @throws {@link CliError} `NOT_A_SESSION` (nothing there, a store root, a file that is not a log) or `IO_ERROR`.
 */
export async function resolveSession(argument: string, cwd: string): Promise<SessionLocation> {
  const path = resolve(cwd, argument)
  const shown = displayPath(path, cwd)
  let stats: Awaited<ReturnType<typeof lstat>>
  try {
    stats = await lstat(path)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') {
      throw new CliError({
        code: CliErrorCode.NOT_A_SESSION,
        message: `${shown} does not exist: expected a session directory or a session log file`,
        path: shown,
      })
    }
    throw ioError(error, { path: shown, doing: 'read' })
  }
  let directory: string
  let namedFile: string | null = null
  if (stats.isDirectory() || stats.isSymbolicLink()) {
    directory = path
  } else {
    const name = basename(path)
    if (!LOG_FILE_PATTERN.test(name)) {
      const hint = /\.torn-[0-9]/.test(name)
        ? ' (a quarantine file of torn bytes, not a log)'
        : name.startsWith('.tmp-')
          ? ' (a temp file of an unfinished publish, not a log)'
          : ''
      throw new CliError({
        code: CliErrorCode.NOT_A_SESSION,
        message: `${shown} is not a session log${hint}: expected a file named session.v4.jsonl (or another generation: session.jsonl, session.vN.jsonl[.zstd]) or its directory`,
        path: shown,
      })
    }
    directory = dirname(path)
    if (name !== LOG_FILE_NAME) namedFile = name
  }
  const id = basename(directory)
  let generations: string[]
  try {
    generations = await logNamesIn(directory)
  } catch (error) {
    throw ioError(error, { path: displayPath(directory, cwd), doing: 'list' })
  }
  if (generations.length === 0) {
    const inside = await readdir(directory).catch(() => [] as string[])
    let sessions = 0
    for (const name of inside.slice(0, 1000)) {
      if (!SESSION_ID_PATTERN.test(name)) continue
      const names = await logNamesIn(join(directory, name)).catch(() => [])
      if (names.length > 0) sessions += 1
    }
    throw new CliError({
      code: CliErrorCode.NOT_A_SESSION,
      message:
        sessions > 0
          ? `${shown} is a store root (${sessions} session${sessions === 1 ? '' : 's'} inside), not a session: name one session directory, or run agent-ledger list ${shown}`
          : `${shown} is not a session directory: expected ${LOG_FILE_NAME} inside it, found no session log`,
      path: shown,
    })
  }
  return {
    root: dirname(directory),
    id,
    directory,
    logFile: join(directory, LOG_FILE_NAME),
    generations,
    namedFile,
  }
}

/**
 * Resolves a `<root>` argument (a store root directory).
 *
 * @param argument - The argument as typed.
 * @param cwd - The working directory.
 * @returns The absolute root.
 * @throws {@link CliError} `NOT_A_SESSION` when it does not exist, is not a directory, or is a
 *   session directory rather than a root.
 */
export async function resolveRoot(argument: string, cwd: string): Promise<string> {
  const path = resolve(cwd, argument)
  const shown = displayPath(path, cwd)
  try {
    const stats = await lstat(path)
    if (!stats.isDirectory()) {
      throw new CliError({
        code: CliErrorCode.NOT_A_SESSION,
        message: `${shown} is not a directory: expected a store root (a directory of session directories)`,
        path: shown,
      })
    }
  } catch (error) {
    if (CliError.is(error)) throw error
    if (errnoOf(error) === 'ENOENT') {
      throw new CliError({
        code: CliErrorCode.NOT_A_SESSION,
        message: `${shown} does not exist: expected a store root (a directory of session directories)`,
        path: shown,
      })
    }
    throw ioError(error, { path: shown, doing: 'read' })
  }
  const logs = await logNamesIn(path).catch(() => [] as string[])
  if (logs.length > 0) {
    const parent = displayPath(dirname(path), cwd)
    throw new CliError({
      code: CliErrorCode.NOT_A_SESSION,
      message: `${shown} is a session directory (it holds ${logs.join(', ')}), not a store root: expected a directory of session directories; list its root with agent-ledger list ${parent}, or look at this session with agent-ledger inspect ${shown}`,
      path: shown,
    })
  }
  return path
}

/**
 * Notes about what a `<session>` argument resolved to that the user should know (a named
 * file that is not the log this version reads; a directory without the current generation).
 *
 * @param location - The resolved session.
 * @returns Zero or more one-sentence notes.
 */
export function locationNotes(location: SessionLocation): string[] {
  const notes: string[] = []
  const current = basename(location.logFile)
  if (!location.generations.includes(current) && !location.generations.includes(`${current}.zstd`)) {
    notes.push(
      `${location.id} holds ${location.generations.join(', ')} but no ${current}: it is read through an in-memory migration; run agent-ledger migrate on it to write the current generation`,
    )
  } else if (location.namedFile !== null) {
    notes.push(`${location.namedFile} is not the current log of ${location.id}; reading ${current}`)
  }
  return notes
}
