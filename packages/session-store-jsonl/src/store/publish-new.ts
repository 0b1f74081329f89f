/*
 * How a new session's log appears (create, fork, salvage): under the session's writer lock,
 * through the one publish-by-link protocol of `src/publish.ts` (temp file, fsync, read back
 * and verified, `link()`, directory fsync; a failed directory fsync withdraws the new name
 * and reports `poisoned`), with the bytes of the log's encoding from its `LogAdapter`.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import type { FileHandleOps } from '../fs-ops.ts'
import { listGenerations } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { encodeJsonLine } from '../line-codec.ts'
import type { LogAdapter } from '../log-adapter.ts'
import { publishFile, removeStaleTemps } from '../publish.ts'
import type { PublishHooks } from '../publish.ts'
import type { ByteSource } from '../read-log.ts'
import { acquireWriterLock } from '../writer-lock.ts'
import type { WriterLock } from '../writer-lock.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { sessionLog } from '../zstd-session.ts'
import type { StoreContext } from './context.ts'

/** Every encoding a v4 log can have: a new session may have none of them yet. */
const LOG_ENCODINGS: readonly LogEncoding[] = ['plain', 'zstd']

/** What {@link publishNewSession} publishes. */
export interface NewSessionLog {
  readonly id: string
  readonly directory: string
  /** The operation, for the temp name and the failure code (`CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`). */
  readonly operation: 'create' | 'fork' | 'salvage'
  readonly header: SessionHeader
  /** The new log's encoding. */
  readonly adapter: LogAdapter
  /** The event lines after the header, each with its `\n`; produced once, streamed. */
  readonly body: () => ByteSource
  /** What the body holds, checked when the staged file is read back: its line count and its last line. */
  readonly expected: { readonly lines: number; readonly lastLine: Buffer | null }
  /** Crash-test seam: called at the publish points. */
  readonly hooks?: PublishHooks | undefined
}

/**
 * Publishes a new session's log by link and returns its open `O_APPEND` handle (the
 * published inode), the held writer lock and the log's size. Nothing is published on any
 * failure; the lock is released then.
 *
 * @throws {@link JsonlStoreError} `SESSION_EXISTS`, `SYMLINK_REFUSED`, `SESSION_LOCKED`, `DISK_FULL`,
 *   and the operation's failure code (`CREATE_FAILED`, `FORK_FAILED`, `SALVAGE_FAILED`; details
 *   `step`, `cause`, `published`, `poisoned`).
 */
export async function publishNewSession(
  ctx: StoreContext,
  request: NewSessionLog,
): Promise<{ handle: FileHandleOps; lock: WriterLock; size: number }> {
  const { id, directory, adapter } = request
  await assertNoLog(ctx, id, directory)
  const lock = await acquireWriterLock(ctx.fs, directory, ctx.lock)
  try {
    await assertNoLog(ctx, id, directory)
    await removeStaleTemps(ctx.fs, directory)
    const headerLine = encodeJsonLine(JSON.stringify(request.header))
    let published
    try {
      published = await publishFile({
        fs: ctx.fs,
        directory,
        target: adapter.log.name,
        kind: request.operation,
        operation: request.operation,
        content: () => adapter.stream(headerLine, request.body()),
        verify: (staged) => verifyNewLog(adapter, staged, { headerLine, ...request.expected }),
        ifExists: 'refuse',
        randomHex: ctx.randomHex,
        display: id,
        keepHandle: true,
        appendOnly: true,
        lock,
        ...(request.hooks === undefined ? {} : { hooks: request.hooks }),
      })
    } catch (error) {
      throw await existingTarget(ctx, { id, directory, adapter }, error)
    }
    return { handle: published.handle!, lock, size: published.size }
  } catch (error) {
    await lock.release().catch(() => undefined)
    throw error
  }
}

/**
 * Reads the staged log back through its encoding's scanner: the header line, then exactly
 * the expected number of lines, the last one byte for byte, nothing torn or damaged.
 */
async function verifyNewLog(
  adapter: LogAdapter,
  staged: ByteSource,
  expected: { readonly headerLine: Buffer; readonly lines: number; readonly lastLine: Buffer | null },
): Promise<void> {
  let header: Buffer | null = null
  let last: Buffer | null = null
  let lines = 0
  const scan = adapter.scan(staged, {
    onLine: (location) => {
      if (location.line === 1) header = Buffer.from(location.bytes)
      else {
        lines += 1
        last = Buffer.from(location.bytes)
      }
      return false
    },
  })
  let step = await scan.next()
  while (step.done !== true) step = await scan.next()
  const outcome = step.value
  const same = (found: Buffer | null, wanted: Buffer | null): boolean =>
    found === null || wanted === null ? found === wanted : found.equals(wanted.subarray(0, -1))
  const problems = [
    outcome.damage === null ? null : `damage (${outcome.damage.message})`,
    outcome.tornTail === null ? null : `a torn tail of ${outcome.tornTail.bytes} bytes`,
    same(header, expected.headerLine) ? null : 'a different header line',
    lines === expected.lines ? null : `${lines} event lines instead of ${expected.lines}`,
    same(last, expected.lastLine) ? null : 'a different last line',
  ].filter((problem) => problem !== null)
  if (problems.length === 0) return
  throw new JsonlStoreError({
    code: JsonlErrorCode.WRITE_FAILED,
    message: `The staged ${adapter.log.file} does not read back as written: expected the header and ${expected.lines} event lines, found ${problems.join(', ')}; nothing was published.`,
    file: adapter.log.file,
    details: { op: 'verify', cause: 'STAGED_CONTENT_DIFFERS', problems },
    ...(outcome.damage === null ? {} : { cause: outcome.damage }),
  })
}

/**
 * A publish refused because the target appeared meanwhile (`ifExists: 'refuse'`) is the
 * store's `SESSION_EXISTS`, or `SYMLINK_REFUSED` for a symbolic link; other errors pass.
 */
async function existingTarget(
  ctx: StoreContext,
  where: { readonly id: string; readonly directory: string; readonly adapter: LogAdapter },
  error: unknown,
): Promise<unknown> {
  if (!JsonlStoreError.is(error) || error.code !== JsonlErrorCode.MIGRATION_CONFLICT) return error
  const path = join(where.directory, where.adapter.log.name)
  const existing = await ctx.fs.lstat(path).catch(() => undefined)
  if (existing?.isSymbolicLink() === true) return symlinkError(where.id, where.adapter.log.file)
  return existsError(where.id, where.adapter.log.file)
}

/**
 * A session has one log: no v4 log in either encoding (a symbolic link there is
 * `SYMLINK_REFUSED`, never followed) and no generation of another version (an older
 * `session.jsonl`, a newer `session.v5.jsonl`) may exist yet: `SESSION_EXISTS`.
 */
async function assertNoLog(ctx: StoreContext, id: string, directory: string): Promise<void> {
  for (const encoding of LOG_ENCODINGS) {
    const log = sessionLog(id, encoding)
    let found
    try {
      found = await ctx.fs.lstat(join(directory, log.name))
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') continue
      throw toStoreError(error, { op: 'stat', file: log.file, fallback: JsonlErrorCode.READ_FAILED })
    }
    throw found.isSymbolicLink() ? symlinkError(id, log.file) : existsError(id, log.file)
  }
  const other = (await listGenerations(ctx.fs, directory)).find(
    (generation) => generation.version !== SESSION_FORMAT_VERSION,
  )
  if (other === undefined) return
  throw new JsonlStoreError({
    code: JsonlErrorCode.SESSION_EXISTS,
    message: `Cannot create session ${id}: expected no session with that id, found ${id}/${other.file}.`,
    file: `${id}/${other.file}`,
    details: { version: other.version },
  })
}

/**
 * Refuses a target id that already holds a session (`SESSION_EXISTS`, or `SYMLINK_REFUSED`
 * for a symbolic link), before any source is read: a fork into an existing id says so at
 * once. The publish checks again (another create may win meanwhile).
 *
 * @param ctx - The store.
 * @param id - The target id (checked).
 */
export async function assertSessionAbsent(ctx: StoreContext, id: string): Promise<void> {
  const directory = join(ctx.root, id)
  let stats
  try {
    stats = await ctx.fs.lstat(directory)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return
    throw toStoreError(error, { op: 'stat', file: id, fallback: JsonlErrorCode.READ_FAILED })
  }
  // Anything but a real directory (a symbolic link...) is refused by the create itself.
  if (stats.isDirectory()) await assertNoLog(ctx, id, directory)
}

function symlinkError(id: string, file: string): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SYMLINK_REFUSED,
    message: `Cannot create session ${id}: expected no file at ${file}, found a symbolic link (never followed).`,
    file,
    details: { which: 'log' },
  })
}

function existsError(id: string, file: string = `${id}/${LOG_FILE_NAME}`): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SESSION_EXISTS,
    message: `Cannot create session ${id}: expected no session with that id, found ${file}.`,
    file,
  })
}
