import { randomBytes } from 'node:crypto'
import type { Stats } from 'node:fs'
import { dirname, join } from 'node:path'

import { coreEventRegistry } from '@agent-ledger/session-events'
import type { EventRegistry } from '@agent-ledger/session-events'

import { errnoOf, toStoreError } from '../fs-errors.ts'
import { nodeFsOps } from '../fs-ops.ts'
import type { FsOps } from '../fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { LOG_FILE_NAME } from '../layout.ts'
import { resolveFlushPolicy, resolveLimits } from '../limits.ts'
import type { FlushPolicy, StoreLimits } from '../limits.ts'
import { V4_FORMAT } from '../log-format.ts'
import { DEFAULT_REDACTION_POLICY } from '../redaction.ts'
import type { RedactionPolicy } from '../redaction.ts'
import type { StoreLogger } from '../session-writer.ts'
import type { LockOptions } from '../writer-lock.ts'
import type { CheckpointContext } from '../checkpoint-open.ts'
import { resolveCheckpointOptions } from '../checkpoint-options.ts'
import type { CheckpointOptions } from '../checkpoint-options.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import type { SessionStoreOptions } from './api.ts'

/** Everything the store's operations share: the resolved options and the root check's state. */
export interface StoreContext {
  readonly root: string
  readonly fs: FsOps
  readonly clock: () => string
  readonly registry: EventRegistry
  readonly limits: StoreLimits
  readonly flushPolicy: FlushPolicy
  readonly lock: Partial<LockOptions>
  readonly logger: StoreLogger
  readonly randomHex: (byteCount: number) => string
  readonly redaction: RedactionPolicy | null
  readonly checkpoint: CheckpointOptions
  readonly encoding: LogEncoding
  /** Set once the root passed its check (S1): later calls skip it. */
  rootChecked: boolean
}

const defaultLogger: StoreLogger = {
  warn(message, details) {
    process.emitWarning(details === undefined ? message : `${message} ${JSON.stringify(details)}`, {
      code: 'AGENT_LEDGER_STORE',
    })
  },
}

function hexRandom(byteCount: number): string {
  return randomBytes(byteCount).toString('hex')
}

export function isRefusal(error: JsonlStoreError): boolean {
  return (
    error.code === JsonlErrorCode.VERSION_TOO_NEW ||
    error.code === JsonlErrorCode.GENERATION_VERSION_MISMATCH ||
    (error.code === JsonlErrorCode.INVALID_HEADER && error.line === 1)
  )
}

export function checkedEncoding(encoding: unknown): LogEncoding {
  if (encoding === 'plain' || encoding === 'zstd') return encoding
  throw new JsonlStoreError({
    code: JsonlErrorCode.INVALID_OPTION,
    message: `Store option encoding must be "plain" or "zstd", found ${JSON.stringify(encoding) ?? String(encoding)}.`,
    file: '',
    details: { option: 'encoding' },
  })
}

/** Resolves the options of {@link createSessionStore} (defaults, limits, encoding). */
export function createStoreContext(options: SessionStoreOptions): StoreContext {
  const randomHex = options.lock?.randomHex ?? hexRandom
  return {
    root: options.root,
    fs: options.fs ?? nodeFsOps,
    clock: options.clock ?? (() => new Date().toISOString()),
    registry: options.registry ?? coreEventRegistry,
    limits: resolveLimits(options.limits),
    flushPolicy: resolveFlushPolicy(options.flush),
    randomHex,
    lock: { ...options.lock, randomHex },
    logger: options.logger ?? defaultLogger,
    redaction: options.redaction === undefined ? DEFAULT_REDACTION_POLICY : options.redaction,
    checkpoint: resolveCheckpointOptions(options.checkpoint),
    encoding: checkedEncoding(options.encoding ?? 'plain'),
    rootChecked: false,
  }
}

/** What the checkpoint code needs to find, verify, use and write one session's checkpoint. */
export function checkpointContext(ctx: StoreContext, id: string, directory: string): CheckpointContext {
  return {
    fs: ctx.fs,
    directory,
    id,
    file: `${id}/${LOG_FILE_NAME}`,
    generationFile: LOG_FILE_NAME,
    format: V4_FORMAT,
    limits: ctx.limits,
    registry: ctx.registry,
    logger: ctx.logger,
    options: ctx.checkpoint,
  }
}

/** Checks the root (once per store, after a success): a directory, not group/world-writable, owned by us (S1). */
export async function ensureRoot(ctx: StoreContext, create: boolean): Promise<void> {
  if (ctx.rootChecked) return
  await checkRoot(ctx, create)
  ctx.rootChecked = true
}

async function checkRoot(ctx: StoreContext, create: boolean): Promise<void> {
  const fs = ctx.fs
  let stats: Stats
  try {
    stats = await fs.stat(ctx.root)
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT' || !create) {
      if (errnoOf(error) === 'ENOENT') {
        throw new JsonlStoreError({
          code: JsonlErrorCode.SESSION_NOT_FOUND,
          message: `The store root ${ctx.root} does not exist: expected a directory of sessions.`,
          file: '',
          details: { root: ctx.root },
          cause: error,
        })
      }
      throw toStoreError(error, { op: 'stat', file: ctx.root, fallback: JsonlErrorCode.READ_FAILED })
    }
    await mkdirs(ctx, ctx.root)
    stats = await fs.stat(ctx.root)
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined
  const mode = stats.mode & 0o777
  if (!stats.isDirectory() || (mode & 0o022) !== 0 || (uid !== undefined && stats.uid !== uid)) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.UNSAFE_ROOT,
      message: `The store root ${ctx.root} is unsafe: expected a directory owned by uid ${String(uid)} and writable only by it, found ${stats.isDirectory() ? 'a directory' : 'not a directory'} with mode ${mode.toString(8)} owned by uid ${stats.uid}.`,
      file: '',
      details: {
        mode: mode.toString(8),
        owner: stats.uid,
        expectedOwner: uid ?? null,
        directory: stats.isDirectory(),
      },
    })
  }
}

async function mkdirs(ctx: StoreContext, path: string): Promise<void> {
  const fs = ctx.fs
  try {
    await fs.mkdir(path, 0o700)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'EEXIST') return
    if (code !== 'ENOENT' || dirname(path) === path) {
      throw toStoreError(error, { op: 'mkdir', file: path, fallback: JsonlErrorCode.WRITE_FAILED })
    }
    await mkdirs(ctx, dirname(path))
    await mkdirs(ctx, path)
    return
  }
  await fs.chmod(path, 0o700)
  await fs.fsyncDirectory(dirname(path)).catch(() => undefined)
}

/** Creates (0700) or checks the session directory: never a symlink. */
export async function ensureSessionDirectory(ctx: StoreContext, id: string): Promise<string> {
  const fs = ctx.fs
  const directory = join(ctx.root, id)
  try {
    await fs.mkdir(directory, 0o700)
    const created = await fs.lstat(directory)
    if (created.isDirectory() && (created.mode & 0o777) !== 0o700) await fs.chmod(directory, 0o700)
    await fs.fsyncDirectory(ctx.root)
    return directory
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') {
      throw toStoreError(error, {
        op: 'mkdir',
        file: id,
        which: 'session-directory',
        fallback: JsonlErrorCode.WRITE_FAILED,
      })
    }
  }
  await checkSessionDirectory(ctx, id, { write: true })
  return directory
}

export async function checkSessionDirectory(
  ctx: StoreContext,
  id: string,
  options: { readonly write: boolean },
): Promise<string> {
  const directory = join(ctx.root, id)
  let stats: Stats
  try {
    stats = await ctx.fs.lstat(directory)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw notFound(id, error)
    throw toStoreError(error, { op: 'stat', file: id, fallback: JsonlErrorCode.READ_FAILED })
  }
  if (stats.isSymbolicLink()) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.SYMLINK_REFUSED,
      message: `The directory of session ${id} is a symbolic link: expected a real directory (never followed).`,
      file: id,
      details: { which: 'session-directory' },
    })
  }
  if (!stats.isDirectory()) throw notFound(id, undefined)
  // Only ever narrow an existing mode (drop group/other bits): a deliberately read-only 0500 stays so.
  if (options.write && (stats.mode & 0o077) !== 0) {
    const narrowed = stats.mode & 0o700
    ctx.logger.warn(
      `Session directory ${id} had mode ${(stats.mode & 0o777).toString(8)}; set to ${narrowed.toString(8)}.`,
      { id, mode: (stats.mode & 0o777).toString(8) },
    )
    await ctx.fs.chmod(directory, narrowed)
  }
  return directory
}

export function notFound(id: string, cause: unknown): JsonlStoreError {
  return new JsonlStoreError({
    code: JsonlErrorCode.SESSION_NOT_FOUND,
    message: `Session ${id} was not found: expected ${id}/${LOG_FILE_NAME} under the store root.`,
    file: `${id}/${LOG_FILE_NAME}`,
    cause,
  })
}
