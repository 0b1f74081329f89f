/*
 * RELIABILITY I7: a migrated generation whose source changed after the migration (events
 * appended to the old file, or its bytes rewritten) is a fork of the history, never merged.
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { basename, join } from 'node:path'

import { coreEventRegistry } from '@agent-ledger/session-events'
import type { EventRegistry, SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { nodeFsOps } from '../fs-ops.ts'
import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { generationFileName, parseGenerationFileName } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { resolveLimits } from '../limits.ts'
import type { StoreLimits } from '../limits.ts'
import { readFileChunks } from '../read-log.ts'
import { assertSessionId } from '../session-id.ts'
import { READABLE_VERSIONS, readGeneration, scanGeneration } from './generation-readers.ts'

/** The outcome of {@link detectGenerationFork}. */
export type GenerationForkCheck =
  /** The current generation was not written by migration (no `migratedFrom`). */
  | { readonly status: 'not-migrated' }
  /** The source generation is byte-identical to what was migrated. */
  | { readonly status: 'intact' }
  /** The source generation is gone (a historical file was deleted by hand): nothing to compare. */
  | { readonly status: 'missing'; readonly file: string }
  /** The source generation changed after the migration (RELIABILITY I7). */
  | { readonly status: 'forked'; readonly error: JsonlStoreError }

/**
 * Checks the generation a migrated header names (`migratedFrom`) against what was migrated
 * (RELIABILITY I7): same size and sha256, or a fork. A fork is reported, never merged or
 * ignored: events appended to the old generation after the migration would otherwise be
 * lost silently.
 *
 * Cost: one read of the old generation (hashing; a second one, a scan, only when it differs). With
 * `check: 'size'`, an unchanged size is trusted without hashing.
 *
 * @param options - The session directory, the current generation's header, and seams.
 * @returns `not-migrated`, `intact`, `missing`, or `forked` with a `GENERATION_FORK` error
 *   (details `version`, `lastSeq` in the old numbering, `migratedFromLastSeq`, `reason`:
 *   'appended' | 'truncated' | 'rewritten', `bytes`, `migratedFromBytes`).
 * @throws {@link JsonlStoreError} `READ_FAILED` / `ACCESS_DENIED` / `SYMLINK_REFUSED` when the old generation cannot be read.
 */
export async function detectGenerationFork(options: {
  readonly fs?: FsOps
  readonly directory: string
  readonly sessionId?: string
  readonly header: SessionHeader
  readonly registry?: EventRegistry
  readonly limits?: Partial<StoreLimits>
  readonly check?: 'sha256' | 'size'
}): Promise<GenerationForkCheck> {
  const migratedFrom = options.header.migratedFrom
  if (migratedFrom === undefined) return { status: 'not-migrated' }
  const fs = options.fs ?? nodeFsOps
  const sessionId = assertSessionId(options.sessionId ?? basename(options.directory))
  const limits = resolveLimits(options.limits)
  const file = `${sessionId}/${migratedFrom.file}`
  const open = (): Promise<FileHandleOps> =>
    fs.open(join(options.directory, migratedFrom.file), constants.O_RDONLY | constants.O_NOFOLLOW)
  let handle: FileHandleOps
  try {
    handle = await open()
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return { status: 'missing', file }
    throw toStoreError(error, { op: 'open', file, which: 'log', fallback: JsonlErrorCode.READ_FAILED })
  }
  try {
    const size = (await handle.stat()).size
    if (size === migratedFrom.bytes && options.check === 'size') return { status: 'intact' }
    const whole = createHash('sha256')
    const prefix = createHash('sha256')
    let position = 0
    for await (const chunk of readFileChunks(handle, { chunkBytes: limits.readChunkBytes })) {
      whole.update(chunk)
      const start = position
      position += chunk.length
      if (start < migratedFrom.bytes)
        prefix.update(position <= migratedFrom.bytes ? chunk : chunk.subarray(0, migratedFrom.bytes - start))
    }
    if (size === migratedFrom.bytes && whole.digest('hex') === migratedFrom.sha256)
      return { status: 'intact' }
    // A fork: read the old generation again, when readable, to report its last seq.
    const generation = parseGenerationFileName(migratedFrom.file)
    let lastSeq: number | null = null
    if (generation?.encoding === 'plain' && READABLE_VERSIONS.includes(generation.version)) {
      const again = await open()
      try {
        const source = readFileChunks(again, { chunkBytes: limits.readChunkBytes })
        const registry = options.registry ?? coreEventRegistry
        lastSeq = (
          await scanGeneration(readGeneration(generation.version, source, { file, limits, registry }))
        ).lastSeq
      } finally {
        await again.close().catch(() => undefined)
      }
    }
    const prefixIntact = size >= migratedFrom.bytes && prefix.digest('hex') === migratedFrom.sha256
    const reason = size < migratedFrom.bytes ? 'truncated' : prefixIntact ? 'appended' : 'rewritten'
    return {
      status: 'forked',
      error: new JsonlStoreError({
        code: JsonlErrorCode.GENERATION_FORK,
        message: `${file} changed after ${sessionId}/${generationFileName(options.header.version)} was migrated from it: expected ${migratedFrom.bytes} bytes up to seq ${migratedFrom.lastSeq} with sha256 ${migratedFrom.sha256.slice(0, 12)}…, found ${size} bytes${lastSeq === null ? '' : ` up to seq ${lastSeq}`} (${reason}); the extra events are neither merged nor ignored.`,
        file,
        details: {
          version: migratedFrom.version,
          lastSeq,
          migratedFromLastSeq: migratedFrom.lastSeq,
          reason,
          bytes: size,
          migratedFromBytes: migratedFrom.bytes,
        },
      }),
    }
  } catch (error) {
    if (JsonlStoreError.is(error)) throw error
    throw toStoreError(error, { op: 'read', file, fallback: JsonlErrorCode.READ_FAILED })
  } finally {
    await handle.close().catch(() => undefined)
  }
}
