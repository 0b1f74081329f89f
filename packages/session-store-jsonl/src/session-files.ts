import { join } from 'node:path'

import type { SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from './fs-errors.ts'
import type { FsOps } from './fs-ops.ts'
import { JsonlErrorCode } from './jsonl-store-error.ts'
import { parseGenerationFileName } from './generations.ts'
import type { GenerationEncoding } from './generations.ts'
import { CORE_CHECKPOINT_FILE_NAME, SEARCH_INDEX_FILE_NAME, TEMP_PREFIX } from './layout.ts'
import { WRITER_LOCK_FILE_NAME } from './writer-lock.ts'
import { readEntry } from './writer-lock-record.ts'

/** What one entry of a session directory is. */
export type SessionFileKind = 'log' | 'quarantine' | 'lock' | 'temp' | 'checkpoint' | 'search-index' | 'other'

/** One entry of a session directory, classified by the store (see {@link SessionStore.sessionFiles}). */
export interface SessionFileEntry {
  /** The name inside the session directory. */
  readonly name: string
  readonly kind: SessionFileKind
  /** Size in bytes (of the entry itself: a symlink is not followed). */
  readonly bytes: number
  /** True for the log the store reads (at most one entry). */
  readonly current: boolean
  /** For a log: its format version (0 for `session.jsonl`). */
  readonly version?: number
  /** For a log: how its bytes are stored. */
  readonly encoding?: GenerationEncoding
}

/** The writer lock's record as found on disk (read-only: nothing is judged or broken). */
export interface SessionLockInfo {
  readonly pid: unknown
  readonly host: unknown
  readonly acquiredAt: unknown
  readonly heartbeatAt: unknown
}

/** The files of one session (see {@link SessionStore.sessionFiles}). */
export interface SessionFiles {
  readonly id: string
  /** The log the store reads, relative to the root (e.g. `a1/session.v4.jsonl.zstd`). */
  readonly current: string
  /** Format version of the current log (4, or an older one read through migration). */
  readonly version: number
  readonly encoding: GenerationEncoding
  /** Every entry of the directory, sorted by name. */
  readonly files: readonly SessionFileEntry[]
  /** The writer lock's record, or null when there is none (or it cannot be read). */
  readonly lock: SessionLockInfo | null
}

/** What {@link SessionStore.readHeader} returns: the header line only, the log not scanned. */
export interface SessionHeaderRead {
  readonly id: string
  /**
   * The header, or null when the log has no valid header line (a crash during creation). For
   * an older generation: the v4 header its migration would write, `migratedFrom` included.
   */
  readonly header: SessionHeader | null
  /** The log read, relative to the root. */
  readonly file: string
  /** Format version of that log. */
  readonly version: number
  readonly encoding: GenerationEncoding
}

function classify(name: string): Pick<SessionFileEntry, 'kind' | 'version' | 'encoding'> {
  const generation = parseGenerationFileName(name)
  if (generation !== null) return { kind: 'log', version: generation.version, encoding: generation.encoding }
  if (/^session(?:\.v[1-9][0-9]*)?\.jsonl(?:\.zstd)?\.torn-[0-9]+(?:-[0-9]+)?$/.test(name)) {
    return { kind: 'quarantine' }
  }
  if (name === WRITER_LOCK_FILE_NAME) return { kind: 'lock' }
  if (name.startsWith(TEMP_PREFIX)) return { kind: 'temp' }
  if (name === CORE_CHECKPOINT_FILE_NAME) return { kind: 'checkpoint' }
  if (name === SEARCH_INDEX_FILE_NAME) return { kind: 'search-index' }
  return { kind: 'other' }
}

/** The record of the writer lock, read as the lock reads it (never through a symlink or a special file). */
async function readLockInfo(fs: FsOps, path: string): Promise<SessionLockInfo | null> {
  const entry = await readEntry(fs, path).catch(() => null)
  const record = entry?.kind === 'present' ? entry.record : undefined
  if (record === undefined) return null
  const { pid, host, acquiredAt, heartbeatAt } = record
  return { pid, host, acquiredAt, heartbeatAt }
}

/**
 * Lists and classifies a session directory (read-only).
 *
 * @param fs - File system.
 * @param request - The session directory, the id and the current log's name (inside it).
 * @returns The entries and the lock record.
 */
export async function listSessionFiles(
  fs: FsOps,
  request: {
    readonly directory: string
    readonly id: string
    readonly currentName: string
    readonly version: number
    readonly encoding: GenerationEncoding
  },
): Promise<SessionFiles> {
  const { directory, id } = request
  let names: string[]
  try {
    names = (await fs.readdir(directory)).sort()
  } catch (error) {
    throw toStoreError(error, { op: 'list', file: id, fallback: JsonlErrorCode.READ_FAILED })
  }
  const files: SessionFileEntry[] = []
  for (const name of names) {
    let bytes: number
    try {
      bytes = (await fs.lstat(join(directory, name))).size
    } catch (error) {
      // Removed between the listing and the lstat (a writer finishing a publish): skip it.
      if (errnoOf(error) === 'ENOENT') continue
      throw toStoreError(error, { op: 'stat', file: `${id}/${name}`, fallback: JsonlErrorCode.READ_FAILED })
    }
    files.push({ name, bytes, current: name === request.currentName, ...classify(name) })
  }
  const lock = files.some((entry) => entry.kind === 'lock')
    ? await readLockInfo(fs, join(directory, WRITER_LOCK_FILE_NAME))
    : null
  return {
    id,
    current: `${id}/${request.currentName}`,
    version: request.version,
    encoding: request.encoding,
    files,
    lock,
  }
}
