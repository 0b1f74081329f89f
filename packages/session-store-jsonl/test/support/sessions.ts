/**
 * Shared helpers for the store-core tests: temp roots, a deterministic clock, realistic
 * event inputs, and fixture sessions written through the library itself.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput, SessionHeader } from '@agent-ledger/session-events'

import { crc32c } from '@agent-ledger/session-store'
import type { SessionStore as CoreStore, SessionStoreWarning } from '@agent-ledger/session-store'
import { parseHeaderLine } from '@agent-ledger/session-store/line-codec'

import { createJsonlStore, nodeFsOps } from '../../src/index.ts'
import { encodeJsonLine } from '../../src/format.ts'
import type { FsOps, JsonlStore, JsonlStoreOptions } from '../../src/index.ts'

/** A fresh 0700 directory under the OS temp dir; removed by the returned cleanup. */
export function makeTempDir(prefix = 'al-store-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

/** A clock that ticks one second per call from 2026-01-01, so files are byte-for-byte reproducible. */
function steppingClock(start = Date.UTC(2026, 0, 1)): () => string {
  let tick = 0
  return () => new Date(start + 1000 * tick++).toISOString()
}

/**
 * The one store API over `root` for tests: the core over the JSONL backend
 * (`createJsonlStore`), with a deterministic clock (one second per call from 2026-01-01), a
 * fixed lease owner, and the core's warnings collected.
 */
export function coreTestStore(
  root: string,
  options: Partial<Omit<JsonlStoreOptions, 'root'>> = {},
): { store: JsonlStore; warnings: SessionStoreWarning[] } {
  const warnings: SessionStoreWarning[] = []
  const store = createJsonlStore({
    root,
    clock: steppingClock(),
    owner: 'test-writer',
    onWarning: (warning) => warnings.push(warning),
    ...options,
  })
  return { store, warnings }
}

/** Writes a session through the one store API: create, append `inputs`, close (flushes). Returns the log path. */
export async function writeCoreSession(
  store: JsonlStore,
  id: string,
  inputs: readonly EventInput[],
): Promise<string> {
  const writer = await store.create({ id, header: { cwd: '/srv/project' } })
  for (const input of inputs) writer.append(input)
  await writer.close()
  return join(store.backend.capabilities.files.sessionDirectory(id), 'session.v4.jsonl')
}

/** One complete turn: user asks, assistant calls a tool, the tool answers, assistant replies. */
export function turnInputs(turn: number, options: { toolOutput?: string } = {}): EventInput[] {
  const callId = `call_${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    { type: 'user/message', data: { message: { role: 'user', content: `Please read file ${turn}.` } } },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: callId,
              type: 'function',
              function: { name: 'read_file', arguments: `{"path":"f${turn}.ts"}` },
            },
          ],
        },
      },
    },
    { type: 'tool/call', data: { callId, name: 'read_file', arguments: `{"path":"f${turn}.ts"}` } },
    {
      type: 'tool/result',
      data: {
        message: {
          role: 'tool',
          tool_call_id: callId,
          content: options.toolOutput ?? `contents of f${turn}.ts`,
        },
      },
    },
    {
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: `Done with turn ${turn}.` } },
    },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

/**
 * Inputs for exactly `count` events that leave nothing to repair after any prefix that
 * ends on a complete turn: a system message, complete turns, then user messages to pad.
 */
export function closedSessionInputs(count: number): EventInput[] {
  const inputs: EventInput[] = [
    { type: 'system/message', data: { message: { role: 'system', content: 'You are a test.' } } },
  ]
  let turn = 1
  while (inputs.length + 7 <= count - 1) inputs.push(...turnInputs(turn++))
  while (inputs.length < count) {
    inputs.push({
      type: 'user/message',
      data: {
        message: { role: 'user', content: `A note with some text, é and \u2028 inside (${inputs.length}).` },
      },
    })
  }
  return inputs.slice(0, count)
}

/** sha256, size, inode and mtime of a file: "touching nothing" means all four are unchanged. */
export function fileIdentity(path: string): { sha256: string; size: number; ino: number; mtimeMs: number } {
  const stats = statSync(path)
  return {
    sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
    size: stats.size,
    ino: stats.ino,
    mtimeMs: stats.mtimeMs,
  }
}

/** Byte offsets of the starts of every line of a file's content. */
export function lineStarts(content: Buffer): number[] {
  const starts = [0]
  for (
    let index = content.indexOf(0x0a);
    index !== -1 && index + 1 < content.length;
    index = content.indexOf(0x0a, index + 1)
  ) {
    starts.push(index + 1)
  }
  return starts
}

/** Collects an async iterable. */
export async function collect<TValue>(iterable: AsyncIterable<TValue>): Promise<TValue[]> {
  const values: TValue[] = []
  for await (const value of iterable) values.push(value)
  return values
}

/**
 * `content` with its header line's `id` set to `id`, at the same length: a log's header must
 * name its session directory, so a fixture written as one session and placed as another gets
 * the new id, padded with JSON whitespace after the opening `{` so that every byte offset of
 * the fixture stays valid. Content whose first line is not a complete, valid header is
 * returned unchanged (it is what the test places).
 *
 * @throws Error when `id` is longer than the fixture's id (use a longer fixture id).
 */
export function withHeaderId(content: Buffer, id: string): Buffer {
  const end = content.indexOf(0x0a)
  if (end === -1) return content
  const line = content.subarray(0, end)
  let header: SessionHeader
  try {
    const text = line.toString('utf8')
    const ownId = (JSON.parse(text) as { id?: unknown }).id
    header = parseHeaderLine(text, { expectedId: String(ownId), maxDepth: 256, crc32c })
  } catch {
    return content
  }
  if (header.id === id) return content
  const value = JSON.parse(line.toString('utf8')) as Record<string, unknown>
  delete value['crc']
  value['id'] = id
  const json = JSON.stringify(value)
  const padding = line.length + 1 - encodeJsonLine(json).length
  if (padding < 0) {
    throw new Error(
      `placeSession: id ${JSON.stringify(id)} is longer than the fixture's ${JSON.stringify(header.id)}; write the fixture under a longer id`,
    )
  }
  const renamed = encodeJsonLine(`{${' '.repeat(padding)}${json.slice(1)}`)
  return Buffer.concat([renamed, content.subarray(end + 1)])
}

/**
 * Puts `content` as the v4 log of session `id` under `root` (0700 directory, 0600 file), as
 * a crash or a foreign tool would leave it; a valid header gets the id `id` at the same
 * length (see {@link withHeaderId}).
 */
export function placeSession(root: string, id: string, content: Buffer | string): string {
  const directory = join(root, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const path = join(directory, 'session.v4.jsonl')
  writeFileSync(path, withHeaderId(Buffer.from(content), id), { mode: 0o600 })
  return path
}

/** The names in a directory, sorted. */
export function namesIn(directory: string): string[] {
  return readdirSync(directory).sort()
}

/**
 * The real file system with fsync, fdatasync and directory fsync turned into no-ops. Only
 * for exhaustive loops that test classification and repair (T1, I1), where durability is
 * not what is asserted: the crash tests (W1, W2) use the real calls.
 */
export const noSyncFsOps: FsOps = {
  ...nodeFsOps,
  async open(path, flags, mode) {
    const handle = await nodeFsOps.open(path, flags, mode)
    return { ...handle, path: handle.path, datasync: () => Promise.resolve(), sync: () => Promise.resolve() }
  },
  fsyncDirectory: () => Promise.resolve(),
}

/** Runs `task` over `items` with at most `limit` in flight (the exhaustive loops are I/O-latency bound). */
export async function forEachConcurrently<TItem>(
  items: readonly TItem[],
  limit: number,
  task: (item: TItem) => Promise<void>,
): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next]!
      next += 1
      await task(item)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/** The integers from `start` (inclusive) to `end` (exclusive). */
export function range(start: number, end: number): number[] {
  return Array.from({ length: Math.max(0, end - start) }, (_, index) => start + index)
}

/** A copy of `content` with the byte at `index` XORed with `mask`. */
export function withFlippedByte(content: Buffer, index: number, mask: number): Buffer {
  const copy = Buffer.from(content)
  copy[index] = copy[index]! ^ mask
  return copy
}

/** Writes turns `from`..`from + count - 1` of a chat (start, question, answer, end), one flush per turn, then closes the writer. */
export async function writeTurns(store: CoreStore, id: string, from: number, count: number): Promise<void> {
  const writer = await store.openWriter(id)
  for (let turn = from; turn < from + count; turn++) {
    writer.append({ type: 'turn/start', data: { turn } })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: `question ${turn}` } } })
    writer.append({
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: `answer ${turn}` } },
    })
    writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
    await writer.flush()
  }
  await writer.close()
}
