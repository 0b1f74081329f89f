/**
 * The JSONL backend's `create`: the header and seed published as the session's log with
 * `publishFile` (temp, fsync, read back and verify, `link()`, directory fsync) under the
 * writer lock; a plain log's head is remembered for the first lease after it.
 */
import { SessionStoreError, SessionStoreErrorCode, seedBatches } from '@agent-ledger/session-store'
import type { CreateRequest } from '@agent-ledger/session-store'

import type { FsOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import { publishFile, removeStaleTemps } from '../publish.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { LockOptions, WriterLock } from '../writer-lock.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { scanHead } from './line-scan.ts'
import { portError, throwIfAborted, toPortError } from './port-errors.ts'
import { counted, lineBytes, rememberPublished, writtenHead } from './published-head.ts'
import type { PublishedHead, Written } from './published-head.ts'
import { checkRoot, ensureSessionDirectory, removeMadeDirectory } from './session-dirs.ts'

/** What `create` needs from the backend. */
export interface CreateContext {
  readonly fs: FsOps
  readonly root: string
  readonly limits: StoreLimits
  readonly encoding: LogEncoding
  readonly lock: Partial<LockOptions>
  readonly randomHex: (byteCount: number) => string
  /** Heads of plain logs this backend published, for the first lease after the create. */
  readonly published: Map<string, PublishedHead>
}

/**
 * Creates a session (the port's `create`): the log published with the publish protocol under
 * the writer lock, nothing visible before the link, no directory left behind by a failure.
 *
 * @param context - The backend's file system, root, limits, lock settings and published heads.
 * @param id - The checked session id.
 * @param request - The port's create request.
 */
export async function createSession(
  context: CreateContext,
  id: string,
  request: CreateRequest,
): Promise<void> {
  throwIfAborted(request.signal, `Creating session ${id}`, id)
  const action = `create session ${id}`
  const adapter = await logAdapter(id, context.encoding, context.limits).catch((error: unknown) => {
    throw toPortError(error, { sessionId: id, action })
  })
  const headerBytes = Buffer.from(`${request.headerLine}\n`, 'utf8')
  // An array seed is encoded whole; a streamed one batch by batch into the temp file (the
  // publish protocol's: fsynced, read back, then linked), so no reader sees it before the link.
  const seed = seedBatches(request, `Creating session ${id}`)
  const array = Array.isArray(request.lines) ? (request.lines as readonly string[]) : null
  const written: Written = { lines: 0, last: null }
  const content =
    array === null
      ? () => adapter.stream(headerBytes, lineBytes(seed, written))
      : () => once(adapter.start(headerBytes, counted(array, written)))
  await checkRoot(context.fs, context.root, true)
  const { directory, made } = await ensureSessionDirectory(context.fs, context.root, id)
  try {
    await createIn(context, request, { id, action, adapter, directory, content, seed, array, written })
  } catch (error) {
    // A failed create leaves no folder it made (an empty one would list as SESSION_NOT_FOUND).
    if (made) await removeMadeDirectory(context.fs, context.root, directory)
    throw error
  }
}

async function createIn(
  context: CreateContext,
  request: CreateRequest,
  made: {
    readonly id: string
    readonly action: string
    readonly adapter: Awaited<ReturnType<typeof logAdapter>>
    readonly directory: string
    readonly content: Parameters<typeof publishFile>[0]['content']
    readonly seed: ReturnType<typeof seedBatches>
    readonly array: readonly string[] | null
    readonly written: Written
  },
): Promise<void> {
  const { id, action, adapter, directory, content, seed, array, written } = made
  await assertNoLog(context, id, directory)
  let lock: WriterLock
  try {
    lock = await acquireWriterLock(context.fs, directory, context.lock)
  } catch (error) {
    if (JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_LOCKED) {
      throw portError(SessionStoreErrorCode.SESSION_EXISTS, {
        sessionId: id,
        message: `Cannot create session ${id}: expected no session with that id, found its directory locked by another writer (${error.message}).`,
        cause: error,
      })
    }
    throw toPortError(error, { sessionId: id, action })
  }
  try {
    await assertNoLog(context, id, directory)
    await removeStaleTemps(context.fs, directory)
    const published = await publishFile({
      fs: context.fs,
      directory,
      target: adapter.log.name,
      kind: 'create',
      operation: 'create',
      content,
      // Read back from disk before the link: publishFile compares the sha256 of the bytes read
      // with that of the bytes written. A plain log is not parsed again (its lines are the
      // core's, checked as it encoded them; the count of newlines written says no line held
      // one); a `.zstd` log is scanned (its frames decoded, every line checked).
      verify: async (staged) => {
        const scanned =
          adapter.encoding === 'plain'
            ? writtenHead(request.headerLine, written)
            : await scanHead(adapter, staged)
        throwIfAborted(request.signal, `Creating session ${id}`, id)
        const { outcome } = scanned
        const count = array === null ? seed.count : array.length
        const lastCrc = seed.lastCrc()
        if (
          outcome.damage !== null ||
          outcome.tornTail !== null ||
          scanned.headerLine !== request.headerLine ||
          scanned.nextSeq !== count ||
          scanned.lastCrc !== lastCrc
        ) {
          throw portError(JsonlErrorCode.CREATE_FAILED, {
            sessionId: id,
            details: { jsonlCode: JsonlErrorCode.CREATE_FAILED, step: 'verify', published: false },
            message: `Creating session ${id}: the staged ${adapter.log.name} does not read back as written: expected the header and ${count} lines ending with crc ${lastCrc ?? 'none'}, found ${scanned.nextSeq} lines ending with crc ${scanned.lastCrc ?? 'none'}${outcome.damage === null ? '' : ` and damage (${outcome.damage.message})`}; nothing was published.`,
          })
        }
      },
      ifExists: 'refuse',
      randomHex: context.randomHex,
      display: id,
      lock,
    })
    if (adapter.encoding === 'plain' && published.outcome === 'published') {
      await rememberPublished(context.published, context.fs, {
        id,
        path: published.path,
        log: adapter.log.name,
        nextSeq: written.lines,
        lastLine: written.last,
      })
    }
  } catch (error) {
    // The caller's stream failed: its own error, unchanged (nothing was linked).
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the caller's own error, unchanged (the port's contract)
    if (seed.streamError !== undefined) throw seed.streamError
    const cause = (error as { cause?: unknown }).cause
    throw toPortError(JsonlStoreError.is(error) && SessionStoreError.is(cause) ? cause : error, {
      sessionId: id,
      action,
    })
  } finally {
    await lock.release().catch(() => undefined)
  }
}

/** A session has one log: no generation of any version or encoding may exist yet. */
async function assertNoLog(context: CreateContext, id: string, directory: string): Promise<void> {
  const existing = await listGenerations(context.fs, directory).catch((error: unknown) => {
    throw toPortError(error, { sessionId: id, action: `create session ${id}` })
  })
  if (existing.length === 0) return
  throw portError(SessionStoreErrorCode.SESSION_EXISTS, {
    sessionId: id,
    message: `Cannot create session ${id}: expected no session with that id, found ${id}/${existing[0]!.file}; it was left untouched.`,
    details: { file: `${id}/${existing[0]!.file}` },
  })
}

/** One chunk as the async iterable `publishFile` reads its content from. */
async function* once(chunk: Buffer): AsyncGenerator<Buffer, void, undefined> {
  yield await Promise.resolve(chunk)
}
