import { lstat, readdir } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { asJsonlBackend } from '@agent-ledger/session-store-jsonl'
import type { JsonlFilesCapability, SessionFileKind, SessionFiles } from '@agent-ledger/session-store-jsonl'
import { parseGenerationFileName } from '@agent-ledger/session-store-jsonl/format'

import { CliError, CliErrorCode } from './cli-error.ts'

/** What resolving a `<session>` needs: the working directory and the stores of the command (a `CommandContext`). */
export interface StoreSource {
  readonly cwd: string
  /** Opens (once per command) the store over a JSONL root. */
  store(spec: {
    readonly kind: 'jsonl'
    readonly root: string
    readonly shown: string
  }): Promise<SessionStore>
}

/**
 * The JSONL backend's own code behind a store error: the `details.jsonlCode` the backend
 * puts on the port error it maps one to, else the error's code.
 *
 * @param error - Anything thrown.
 * @returns The code, or undefined for an error that is not a store error.
 */
function jsonlCodeOf(error: unknown): string | undefined {
  if (!SessionStoreError.is(error)) return undefined
  const inner = error.details?.['jsonlCode']
  return typeof inner === 'string' ? inner : error.code
}

/**
 * The file views of a store over a JSONL directory.
 *
 * @param store - A store over a directory.
 * @returns Its JSONL backend's `files` capability.
 * @throws {@link CliError} `UNSUPPORTED_BACKEND` when the store is not over a directory.
 */
export function filesOf(store: SessionStore): JsonlFilesCapability {
  const jsonl = asJsonlBackend(store.backend)
  if (jsonl !== null) return jsonl.capabilities.files
  throw new CliError({
    code: CliErrorCode.UNSUPPORTED_BACKEND,
    message: `expected a store over a JSONL directory, found the ${store.backend.name} backend`,
    details: { backend: store.backend.name },
  })
}

/**
 * The store over a JSONL root, as {@link StoreSource.store} opens it.
 *
 * @param context - The stores of the command.
 * @param root - The root (absolute).
 * @returns The store.
 */
export function jsonlStoreAt(context: StoreSource, root: string): Promise<SessionStore> {
  return context.store({ kind: 'jsonl', root, shown: displayPath(root, context.cwd) })
}

/** Where a `<session>` argument points: the store root, the session id and what the store reads. */
export interface SessionLocation {
  /** The store root (absolute): the session directory's parent. */
  readonly root: string
  /** The session id: the session directory's name. */
  readonly id: string
  /** The session directory (absolute). */
  readonly directory: string
  /** The log the store reads (absolute), whatever its encoding or generation. */
  readonly logFile: string
  /** Format version of that log (4, or older: read through an in-memory migration). */
  readonly version: number
  /** Its size in bytes (for progress), or null when unknown. */
  readonly logBytes: number | null
  /** The session directory as the store classifies it. */
  readonly files: SessionFiles
  /** The file the user named, when the argument was a log file that is not the current log. */
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

/**
 * Resolves a `<session>` argument: a session directory, or a log file inside one.
 *
 * The session directory's parent is the store root and its name the session id. What the
 * directory holds (which log is current, in which encoding and generation) is the JSONL
 * backend's answer (its `files` capability): the CLI knows no file names.
 *
 * @param argument - The argument as typed.
 * @param context - The command's context (working directory, store factory).
 * @returns Where the session is.
 * @throws {@link CliError} `NOT_A_SESSION` (nothing there, a store root, a file that is not a log) or `IO_ERROR`;
 *   the store's own errors (`VERSION_TOO_NEW`, `MIXED_ENCODINGS`, ...).
 */
export async function resolveSession(argument: string, context: StoreSource): Promise<SessionLocation> {
  const path = resolve(context.cwd, argument)
  const shown = displayPath(path, context.cwd)
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
  const named = !(stats.isDirectory() || stats.isSymbolicLink())
  const directory = named ? dirname(path) : path
  const root = dirname(directory)
  const id = basename(directory)
  let files: SessionFiles
  try {
    files = await filesOf(await jsonlStoreAt(context, root)).sessionFiles(id)
  } catch (error) {
    const code = jsonlCodeOf(error)
    if (code === undefined || !NOT_A_SESSION_CODES.has(code)) throw error
    if (named) throw notALog(shown, null)
    // A store root named as a session: its parent may be no store root at all (UNSAFE_ROOT).
    const sessions = await sessionsIn(context, directory)
    if (sessions > 0) throw storeRootNamed(shown, sessions)
    if (code === 'UNSAFE_ROOT') throw error
    throw new CliError({
      code: CliErrorCode.NOT_A_SESSION,
      message: `${shown} is not a session directory: expected a session log inside it, found none`,
      path: shown,
    })
  }
  let namedFile: string | null = null
  if (named) {
    const name = basename(path)
    const entry = files.files.find((candidate) => candidate.name === name)
    if (entry?.kind !== 'log') throw notALog(shown, entry?.kind ?? null)
    if (!entry.current) namedFile = name
  }
  const current = files.files.find((entry) => entry.current)
  return {
    root,
    id,
    directory,
    logFile: join(root, files.current),
    version: files.version,
    logBytes: current?.bytes ?? null,
    files,
    namedFile,
  }
}

function notALog(shown: string, kind: SessionFileKind | null): CliError {
  const hint =
    kind === 'quarantine'
      ? ' (a quarantine file of torn bytes, not a log)'
      : kind === 'temp'
        ? ' (a temp file of an unfinished publish, not a log)'
        : ''
  return new CliError({
    code: CliErrorCode.NOT_A_SESSION,
    message: `${shown} is not a session log${hint}: expected a session's log file (session.v4.jsonl, its .zstd encoding, or an older generation such as session.jsonl) or its directory`,
    path: shown,
  })
}

/** Store errors that mean "no session here" when asked about a `<session>` argument. */
const NOT_A_SESSION_CODES: ReadonlySet<string> = new Set([
  SessionStoreErrorCode.SESSION_NOT_FOUND,
  SessionStoreErrorCode.INVALID_SESSION_ID,
  'UNSAFE_ROOT',
])

/** How many sessions the store lists when `directory` is taken as a store root (0 when it is none). */
async function sessionsIn(context: StoreSource, directory: string): Promise<number> {
  try {
    const store = await jsonlStoreAt(context, directory)
    let count = 0
    let cursor: string | null = null
    do {
      const page = await store.list({ limit: 1000, ...(cursor === null ? {} : { cursor }) })
      count += page.sessions.length
      cursor = page.cursor
    } while (cursor !== null)
    return count
  } catch {
    return 0
  }
}

function storeRootNamed(shown: string, sessions: number): CliError {
  return new CliError({
    code: CliErrorCode.NOT_A_SESSION,
    message: `${shown} is a store root (${sessions} session${sessions === 1 ? '' : 's'} inside), not a session: name one session directory, or run agent-ledger list ${shown}`,
    path: shown,
  })
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
/** The names of the session logs (any generation, either encoding) directly inside a directory. */
async function logNamesIn(directory: string): Promise<string[]> {
  const names = await readdir(directory)
  return names.filter((name) => parseGenerationFileName(name) !== null).sort()
}

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
 * log file that is not the one the store reads; a session read through an in-memory migration).
 *
 * @param location - The resolved session.
 * @returns Zero or more one-sentence notes.
 */
export function locationNotes(location: SessionLocation): string[] {
  const notes: string[] = []
  const current = basename(location.logFile)
  if (location.version < SESSION_FORMAT_VERSION) {
    notes.push(
      `${location.id} holds ${current} (format v${location.version}): it is read through an in-memory migration; run agent-ledger migrate on it to write the current generation`,
    )
  } else if (location.namedFile !== null) {
    notes.push(`${location.namedFile} is not the current log of ${location.id}; reading ${current}`)
  }
  return notes
}
