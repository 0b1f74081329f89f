/**
 * The floors the store's figures are measured beside: bare loops doing the least work any
 * reader, writer or lister of the same bytes must do, with none of the store's checks.
 */
import { spawn } from 'node:child_process'
import { open, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Bytes per read of the bare loops: the store's default `readChunkBytes`. */
const FLOOR_CHUNK_BYTES = 1024 * 1024

/**
 * Splits a stream of chunks on `\n` and `JSON.parse`s every line: the bare part of every
 * open floor. A line inside one chunk is decoded straight from it; a line straddling chunks
 * is concatenated once.
 */
class BareLineParser {
  #pieces: Buffer[] = []
  #pendingBytes = 0
  /** Lines parsed so far. */
  lines = 0
  /** Bytes seen so far. */
  bytes = 0
  /** The last parsed value (kept so the parse is never dead code). */
  last: unknown = null

  /**
   * Feeds one chunk.
   *
   * @param chunk - The next bytes.
   */
  push(chunk: Buffer): void {
    this.bytes += chunk.length
    let start = 0
    let newline = chunk.indexOf(0x0a)
    if (newline === -1) {
      this.#pieces.push(chunk)
      this.#pendingBytes += chunk.length
      return
    }
    if (this.#pendingBytes > 0) {
      this.#pieces.push(chunk.subarray(0, newline))
      const line = Buffer.concat(this.#pieces, this.#pendingBytes + newline)
      this.#pieces = []
      this.#pendingBytes = 0
      this.last = JSON.parse(line.toString('utf8'))
      this.lines += 1
      start = newline + 1
      newline = chunk.indexOf(0x0a, start)
    }
    while (newline !== -1) {
      this.last = JSON.parse(chunk.toString('utf8', start, newline))
      this.lines += 1
      start = newline + 1
      newline = chunk.indexOf(0x0a, start)
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start)
      this.#pieces.push(rest)
      this.#pendingBytes += rest.length
    }
  }
}

/**
 * The open floor: reads a file in 1 MiB chunks through a `FileHandle` (as the store does),
 * splits lines and `JSON.parse`s each.
 *
 * @param file - The log.
 * @returns Lines parsed.
 */
export async function bareOpen(file: string): Promise<number> {
  const handle = await open(file, 'r')
  const parser = new BareLineParser()
  try {
    let position = 0
    for (;;) {
      const chunk = Buffer.allocUnsafe(FLOOR_CHUNK_BYTES)
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, position)
      if (bytesRead === 0) break
      position += bytesRead
      parser.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead))
    }
  } finally {
    await handle.close()
  }
  return parser.lines
}

/**
 * The compressed open floor: `zstd -d -c file`, its stdout split into lines and each `JSON.parse`d.
 *
 * @param file - A zstd file.
 * @returns Lines parsed.
 */
export async function bareZstdPipeline(file: string): Promise<number> {
  const child = spawn('zstd', ['-d', '-c', '-q', file], { stdio: ['ignore', 'pipe', 'pipe'] })
  const parser = new BareLineParser()
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
  for await (const chunk of child.stdout) parser.push(chunk as Buffer)
  const code = await closed
  if (code !== 0) throw new Error(`zstd -d -c ${file} exited ${code}: ${stderr}`)
  return parser.lines
}

/**
 * The durable-append floor: one write and one fdatasync per batch of pre-serialized bytes,
 * through a `FileHandle` (as the store does).
 *
 * @param file - A file to create (truncated if it exists); `prefix` is written and synced untimed.
 * @param batches - The bytes of each batch, in order.
 * @param prefix - Bytes already in the file before the first batch (the header line).
 * @returns Seconds spent on the batches.
 */
export async function bareAppend(file: string, batches: readonly Buffer[], prefix: Buffer): Promise<number> {
  const handle = await open(file, 'w', 0o600)
  try {
    await handle.write(prefix, 0, prefix.length, 0)
    await handle.sync()
    let position = prefix.length
    const started = performance.now()
    for (const batch of batches) {
      await handle.write(batch, 0, batch.length, position)
      await handle.datasync()
      position += batch.length
    }
    return (performance.now() - started) / 1000
  } finally {
    await handle.close()
  }
}

/**
 * The fair durable-append floor: what any durable JSON-lines appender of the same events must
 * do at least. Per batch, `JSON.stringify` of each event (the objects the store logged, read
 * back untimed), each line encoded to UTF-8 and the batch concatenated, then one write and one
 * fdatasync through a `FileHandle`. No validation, redaction, checksum or projection.
 *
 * @param file - A file to create (truncated if it exists); `prefix` is written and synced untimed.
 * @param batches - The events of each batch, in order.
 * @param prefix - Bytes already in the file before the first batch (the header line).
 * @returns Seconds spent on the batches.
 */
export async function fairAppend(
  file: string,
  batches: readonly (readonly unknown[])[],
  prefix: Buffer,
): Promise<number> {
  const handle = await open(file, 'w', 0o600)
  try {
    await handle.write(prefix, 0, prefix.length, 0)
    await handle.sync()
    let position = prefix.length
    const started = performance.now()
    for (const events of batches) {
      // Each line encoded on its own, then one concatenation: measured faster than joining
      // the batch's text first (one long, possibly two-byte string to flatten and encode).
      const bytes = Buffer.concat(events.map((event) => Buffer.from(`${JSON.stringify(event)}\n`, 'utf8')))
      await handle.write(bytes, 0, bytes.length, position)
      await handle.datasync()
      position += bytes.length
    }
    return (performance.now() - started) / 1000
  } finally {
    await handle.close()
  }
}

/**
 * The list floor: readdir, then per session directory open the log, read its first line
 * (64 KiB at most, as the store's header peek), `JSON.parse` it, close; `concurrency`
 * sessions at a time (the store's list concurrency).
 *
 * @param root - The store root.
 * @param request - Log file name and concurrency.
 * @returns Headers parsed.
 */
export async function bareList(
  root: string,
  request: { readonly fileName: string; readonly concurrency: number },
): Promise<number> {
  const names = (await readdir(root)).sort()
  let parsed = 0
  const one = async (name: string): Promise<void> => {
    const handle = await open(join(root, name, request.fileName), 'r')
    try {
      const buffer = Buffer.allocUnsafe(64 * 1024)
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
      const end = buffer.subarray(0, bytesRead).indexOf(0x0a)
      JSON.parse(buffer.toString('utf8', 0, end === -1 ? bytesRead : end))
      parsed += 1
    } finally {
      await handle.close()
    }
  }
  for (let start = 0; start < names.length; start += request.concurrency) {
    await Promise.all(names.slice(start, start + request.concurrency).map(one))
  }
  return parsed
}

/**
 * The cold-open floor: reads `core.checkpoint` and `JSON.parse`s its envelope line, the body's
 * header line and its payload (the projection snapshot), then reads the plain log from the
 * envelope's seek point to the end and `JSON.parse`s each line. Results kept, as any reader
 * that returns the messages keeps them (the heap they fill costs GC time).
 *
 * @param checkpointPath - The session's `core.checkpoint`.
 * @param logPath - Its plain log.
 * @returns Milliseconds.
 */
export async function checkpointFloor(checkpointPath: string, logPath: string): Promise<number> {
  const started = performance.now()
  const kept: unknown[] = []
  const file = await readFile(checkpointPath)
  const envelopeEnd = file.indexOf(0x0a)
  const envelope = JSON.parse(file.toString('utf8', 0, envelopeEnd)) as { seek: { offset: number } | null }
  const bodyHeaderEnd = file.indexOf(0x0a, envelopeEnd + 1)
  kept.push(JSON.parse(file.toString('utf8', envelopeEnd + 1, bodyHeaderEnd)))
  kept.push(JSON.parse(file.toString('utf8', bodyHeaderEnd + 1)))
  if (envelope.seek === null) throw new Error(`${checkpointPath} has no seek point`)
  const handle = await open(logPath, 'r')
  try {
    const size = (await handle.stat()).size
    const tail = Buffer.allocUnsafe(size - envelope.seek.offset)
    await handle.read(tail, 0, tail.length, envelope.seek.offset)
    for (const line of tail.toString('utf8').split('\n')) if (line !== '') kept.push(JSON.parse(line))
  } finally {
    await handle.close()
  }
  return performance.now() - started
}
