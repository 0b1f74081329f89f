/*
 * Generation files: which names in a session directory are logs, of which format version
 * and encoding, and which one is current.
 *
 * `session.jsonl` is format v0 (the seed chapter's own format), `session.vN.jsonl` is
 * format vN for N >= 1 written without leading zeros, and `.zstd` appended means the same
 * content compressed. Nothing else is a generation: temp files (`.tmp-*`), quarantine files
 * (`*.torn-*`), `writer.lock`, checkpoints, `session.v0.jsonl`, `session.v04.jsonl`,
 * upper-case variants. The numerically highest version is current.
 */
import { basename, join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'

import { errnoOf, openLogForRead, toStoreError } from './fs-errors.ts'
import type { FsOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { LOG_FILE_NAME, LOG_FILE_PATTERN } from './layout.ts'
import type { StoreLimits } from './limits.ts'
import { verifyLineChecksum } from './line-codec.ts'
import { LineSplitter } from './line-splitter.ts'
import { readFileChunks } from './read-log.ts'
import { describeFound } from './found.ts'

/** How a generation's bytes are stored. */
export type GenerationEncoding = 'plain' | 'zstd'

/** One generation file of a session directory. */
export interface GenerationFile {
  /** The file name inside the session directory, e.g. `session.v4.jsonl`. */
  readonly file: string
  /** Format version from the name: 0 for `session.jsonl`, N for `session.vN.jsonl`. */
  readonly version: number
  readonly encoding: GenerationEncoding
}

/** The generation to open, and what else the directory holds. */
export interface CurrentGeneration {
  /**
   * The file to read: the highest version; when that version exists in both encodings,
   * the plain file (readable without a codec; see `conflict`).
   */
  readonly current: GenerationFile
  /**
   * Set when the highest version exists in both encodings: a `compress` (or decompress)
   * conversion was interrupted. A write open finishes it; a read open may read either.
   */
  readonly conflict: {
    readonly conflict: 'both-encodings'
    readonly version: number
    /** The plain file, then the `.zstd` file. */
    readonly files: readonly [string, string]
  } | null
  /** Every other generation (older versions, or older conversions), sorted like {@link listGenerations}. */
  readonly history: readonly GenerationFile[]
}

/**
 * Parses a directory entry as a generation file name.
 *
 * @param name - A file name (no directory part).
 * @returns The generation, or null when the name is not a canonical generation name (or its version is beyond 2^53 - 1).
 */
export function parseGenerationFileName(name: string): GenerationFile | null {
  const match = LOG_FILE_PATTERN.exec(name)
  if (match === null) return null
  const version = match[2] === undefined ? 0 : Number(match[2])
  if (!Number.isSafeInteger(version)) return null
  return { file: name, version, encoding: match[3] === undefined ? 'plain' : 'zstd' }
}

/**
 * The canonical file name of a generation.
 *
 * @param version - Format version, a non-negative safe integer.
 * @param encoding - `plain` (default) or `zstd`.
 * @returns `session.jsonl`, `session.vN.jsonl`, or either with `.zstd` appended.
 * @throws {@link RangeError} when `version` is not a non-negative safe integer.
 */
export function generationFileName(version: number, encoding: GenerationEncoding = 'plain'): string {
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new RangeError(`A generation version must be a non-negative safe integer, found ${String(version)}`)
  }
  const base = version === 0 ? 'session.jsonl' : `session.v${version}.jsonl`
  return encoding === 'zstd' ? `${base}.zstd` : base
}

/**
 * Sort order of generations: by version, then plain before zstd.
 *
 * @param left - A generation.
 * @param right - Another.
 * @returns Negative, zero or positive, as `Array.prototype.sort` wants.
 */
export function compareGenerations(left: GenerationFile, right: GenerationFile): number {
  if (left.version !== right.version) return left.version - right.version
  if (left.encoding === right.encoding) return 0
  return left.encoding === 'plain' ? -1 : 1
}

/**
 * Lists the generation files of a session directory (names only: contents are not read).
 *
 * Entries whose names are canonical but which are not regular files (a directory, a
 * symbolic link) are still listed: the open path refuses them with a precise error
 * instead of silently picking an older generation.
 *
 * @param fs - The file-system seam.
 * @param sessionDirectory - The session directory (absolute).
 * @returns The generations, sorted by version then plain before zstd.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND` when the directory does not exist, or
 *   `ACCESS_DENIED` / `READ_FAILED` from the listing.
 */
export async function listGenerations(fs: FsOps, sessionDirectory: string): Promise<GenerationFile[]> {
  let names: string[]
  try {
    names = await fs.readdir(sessionDirectory)
  } catch (error) {
    const code = errnoOf(error)
    throw toStoreError(error, {
      op: 'list',
      file: basename(sessionDirectory),
      which: 'session-directory',
      fallback:
        code === 'ENOENT' || code === 'ENOTDIR'
          ? JsonlErrorCode.SESSION_NOT_FOUND
          : JsonlErrorCode.READ_FAILED,
    })
  }
  const generations: GenerationFile[] = []
  for (const name of names) {
    const generation = parseGenerationFileName(name)
    if (generation !== null) generations.push(generation)
  }
  return generations.sort(compareGenerations)
}

/**
 * Picks the current generation of a listing: the numerically highest version.
 *
 * **Encodings**: one directory holds one encoding. The same version in both encodings is
 * the one allowed mix (a `compress` conversion publishes the other encoding, then removes
 * the source), reported in `conflict` when it concerns the highest version. Otherwise every
 * version must share one encoding; plain and zstd files of different versions are refused.
 *
 * @param generations - A listing (any order), e.g. from {@link listGenerations}.
 * @param display - Prefix for file names in errors (the session id), default none.
 * @returns The current generation and the rest, or null when the listing is empty.
 * @throws {@link JsonlStoreError} `MIXED_ENCODINGS` naming a plain file and a zstd file of different versions.
 */
export function pickCurrentGeneration(
  generations: readonly GenerationFile[],
  display = '',
): CurrentGeneration | null {
  if (generations.length === 0) return null
  const sorted = [...generations].sort(compareGenerations)
  const byVersion = new Map<number, GenerationFile[]>()
  for (const generation of sorted) {
    const list = byVersion.get(generation.version)
    if (list === undefined) byVersion.set(generation.version, [generation])
    else list.push(generation)
  }
  // The highest generation whose version exists only in `encoding`.
  const only = (encoding: GenerationEncoding): GenerationFile | undefined =>
    sorted.findLast((file) => byVersion.get(file.version)!.every((other) => other.encoding === encoding))
  const plain = only('plain')
  const zstd = only('zstd')
  // A forbidden mix: some version has only plain and another only zstd; name the highest of each.
  if (plain !== undefined && zstd !== undefined) {
    const [first, second] = compareGenerations(plain, zstd) > 0 ? [plain, zstd] : [zstd, plain]
    const name = (file: GenerationFile): string => (display === '' ? file.file : `${display}/${file.file}`)
    throw new JsonlStoreError({
      code: JsonlErrorCode.MIXED_ENCODINGS,
      message: `Session directory ${display === '' ? '(session)' : display} mixes encodings: expected one encoding for every generation (both only for the same version during a compress), found ${name(first)} and ${name(second)}.`,
      file: name(first),
      details: { files: [name(first), name(second)] },
    })
  }
  const highest = sorted[sorted.length - 1]!.version
  const top = byVersion.get(highest)!
  const current = top[0]!
  const conflict =
    top.length > 1
      ? {
          conflict: 'both-encodings' as const,
          version: highest,
          files: [top[0]!.file, top[1]!.file] as const,
        }
      : null
  return { current, conflict, history: sorted.filter((file) => file !== current) }
}

/**
 * Checks that a generation's header carries the version its file name says.
 *
 * @param generation - The generation (its name gives the expected version).
 * @param headerVersion - The version read from its header (v0: the header event's `data.version`).
 * @param display - Prefix for the file name in errors (the session id), default none.
 * @throws {@link JsonlStoreError} `GENERATION_VERSION_MISMATCH` with `nameVersion` and `headerVersion`.
 */
export function assertGenerationVersion(
  generation: GenerationFile,
  headerVersion: unknown,
  display = '',
): void {
  if (headerVersion === generation.version) return
  const file = display === '' ? generation.file : `${display}/${generation.file}`
  throw new JsonlStoreError({
    code: JsonlErrorCode.GENERATION_VERSION_MISMATCH,
    message: `The header of ${file} has the wrong format version: expected ${generation.version} (from the file name), found ${describeFound(headerVersion, 'version')}.`,
    file,
    line: 1,
    offset: 0,
    details: { nameVersion: generation.version, headerVersion: headerVersion ?? null },
  })
}

/** What {@link peekHeaderVersion} found on line 1. */
export type HeaderVersionPeek =
  /** The header's own format version: `version` (v1+), or `data.version` of a v0 `session/header` event. */
  | { readonly kind: 'version'; readonly version: unknown }
  /** Line 1 is missing, unterminated, longer than the limit, or not a JSON object: no version to compare. */
  | { readonly kind: 'unreadable' }

/**
 * Reads only line 1 of a plain generation and returns the version its header declares,
 * without judging anything else (no schema); a checksummed header (v1 and later) whose line
 * checksum fails is `unreadable`, never a version. The open path compares it with
 * the file name ({@link assertGenerationVersion}) and with the supported version before
 * taking any lock (RELIABILITY V1: a newer file is refused touching nothing).
 *
 * @param fs - The file-system seam.
 * @param path - The generation's absolute path (opened read-only, never through a symlink).
 * @param options - `maxLineBytes`: longest header line read (default 1 MiB).
 * @returns The declared version, or `unreadable`.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND`, `SYMLINK_REFUSED`, `ACCESS_DENIED`, `READ_FAILED` from the open or the read.
 */
export async function peekHeaderVersion(
  fs: FsOps,
  path: string,
  options: { readonly maxLineBytes?: number; readonly display?: string } = {},
): Promise<HeaderVersionPeek> {
  const file = options.display ?? basename(path)
  const maxLineBytes = options.maxLineBytes ?? 1024 * 1024
  const handle = await openLogForRead(fs, path, file)
  try {
    let first: Buffer | null = null
    const splitter = new LineSplitter({ maxLineBytes })
    const sink = {
      line(bytes: Buffer): boolean {
        first = Buffer.from(bytes)
        return true
      },
      oversizeLine(): boolean {
        return true
      },
    }
    // 4 KiB reads: a header is a few hundred bytes, and this runs on every open.
    for await (const chunk of readFileChunks(handle, { chunkBytes: 4 * 1024, end: maxLineBytes + 1 })) {
      if (splitter.push(chunk, sink)) break
    }
    if (first === null) return { kind: 'unreadable' }
    let value: unknown
    try {
      value = JSON.parse((first as Buffer).toString('utf8'))
    } catch {
      return { kind: 'unreadable' }
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return { kind: 'unreadable' }
    const record = value as Record<string, unknown>
    // A checksummed header's version is believed only when its line checksum passes (FORMAT.md
    // section 8): a bit flip turning "version":4 into 5 is damage, which the full scan reports.
    if (Object.hasOwn(record, 'version')) {
      return verifyLineChecksum(first as Buffer)
        ? { kind: 'version', version: record['version'] }
        : { kind: 'unreadable' }
    }
    const data = Object.hasOwn(record, 'data') ? record['data'] : undefined
    if (
      record['type'] === 'session/header' &&
      typeof data === 'object' &&
      data !== null &&
      Object.hasOwn(data, 'version')
    ) {
      return { kind: 'version', version: (data as Record<string, unknown>)['version'] }
    }
    return { kind: 'version', version: undefined }
  } catch (error) {
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
}

function versionTooNew(file: string, found: number): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.VERSION_TOO_NEW,
    message: `${file} was written by a newer agent-ledger (format version ${found}, this library reads up to ${SESSION_FORMAT_VERSION}): upgrade @agent-ledger/session-store-jsonl to open it.`,
    file,
    line: 1,
    offset: 0,
    details: { found, expected: SESSION_FORMAT_VERSION, supportedMax: SESSION_FORMAT_VERSION },
  })
}

/**
 * Picks a session's current generation (the numerically highest canonical name) and checks
 * its version before anything is locked or written: a newer version (by name or by header)
 * is `VERSION_TOO_NEW`, a header whose version differs from its file name is
 * `GENERATION_VERSION_MISMATCH`. Reads the directory listing and, for a plain generation,
 * line 1 only. A header that cannot be peeked (unreadable, not a number) is left to the
 * format's own reader, which reports it precisely.
 *
 * @param context - File system and limits.
 * @param request - The session directory and id.
 * @returns The current generation and the rest of the listing.
 * @throws {@link JsonlStoreError} `SESSION_NOT_FOUND` (no generation), `MIXED_ENCODINGS`,
 *   `VERSION_TOO_NEW`, `GENERATION_VERSION_MISMATCH`, `ACCESS_DENIED` / `READ_FAILED` from the listing.
 */
export async function resolveCurrentGeneration(
  context: { readonly fs: FsOps; readonly limits: Pick<StoreLimits, 'maxLineBytes'> },
  request: { readonly directory: string; readonly id: string },
): Promise<CurrentGeneration> {
  const { directory, id } = request
  const picked = pickCurrentGeneration(await listGenerations(context.fs, directory), id)
  if (picked === null) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.SESSION_NOT_FOUND,
      message: `Session ${id} was not found: expected ${id}/${LOG_FILE_NAME} (or an older generation such as ${id}/session.jsonl), found no session log.`,
      file: `${id}/${LOG_FILE_NAME}`,
    })
  }
  const { current } = picked
  const file = `${id}/${current.file}`
  let headerVersion: number | null = null
  if (current.encoding === 'plain') {
    const peek = await peekHeaderVersion(context.fs, join(directory, current.file), {
      maxLineBytes: Math.min(context.limits.maxLineBytes, 1024 * 1024),
      display: file,
    }).catch(() => null)
    if (peek?.kind === 'version' && typeof peek.version === 'number' && Number.isInteger(peek.version)) {
      headerVersion = peek.version
    }
  }
  if (headerVersion !== null && headerVersion > SESSION_FORMAT_VERSION)
    throw versionTooNew(file, headerVersion)
  if (current.version > SESSION_FORMAT_VERSION) throw versionTooNew(file, headerVersion ?? current.version)
  if (headerVersion !== null) assertGenerationVersion(current, headerVersion, id)
  return picked
}

/**
 * True when a generation is older than the format this library writes: it is read through
 * migration (in memory when read-only, published as a new generation on a write open).
 *
 * @param generation - The current generation.
 * @returns True for a version below `SESSION_FORMAT_VERSION`.
 */
export function isOlderGeneration(generation: GenerationFile): boolean {
  return generation.version < SESSION_FORMAT_VERSION
}
