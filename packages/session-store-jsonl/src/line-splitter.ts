const NEWLINE = 0x0a

/** Receives the lines a {@link LineSplitter} cuts. Each method returns true to stop the split. */
export interface LineSink {
  /**
   * One complete line, without its `\n`, at most `maxLineBytes` long.
   *
   * @param bytes - The line; may share memory with the pushed chunk, so copy it to keep it.
   * @param offset - Byte offset of the line's first byte in the stream.
   */
  line(bytes: Buffer, offset: number): boolean
  /**
   * A complete line longer than `maxLineBytes`: its bytes were never buffered.
   *
   * @param offset - Byte offset of the line's first byte.
   * @param length - Its length without the `\n`.
   */
  oversizeLine(offset: number, length: number): boolean
}

/** The bytes after the last `\n` of a stream. */
export interface UnterminatedTail {
  /** Byte offset of the first byte after the last `\n`. */
  readonly offset: number
  /** How many bytes follow it. */
  readonly length: number
  /** Those bytes, or null when there are more than `maxLineBytes` of them (never buffered). */
  readonly bytes: Buffer | null
  /** The first of those bytes. */
  readonly firstByte: number
}

/**
 * Cuts a stream of byte chunks into lines on 0x0A only (a `\r` or a raw U+2028 is data).
 *
 * Bytes to lines, nothing more: it knows no JSON and no checksum, so any byte source
 * (a file read in 1 MiB chunks, decompressed zstd frames) can feed the same line checks.
 * Lines inside one chunk are handed out as views into it (no copy); only a line that
 * straddles chunks is copied, once. A line longer than `maxLineBytes` is counted, never
 * buffered, so memory stays bounded by one chunk plus `maxLineBytes`.
 */
export class LineSplitter {
  readonly #maxLineBytes: number
  #offset: number
  #pieces: Buffer[] = []
  #pendingLength = 0
  #pendingStart = -1
  #pendingFirstByte = -1
  #oversize = false
  #stopped = false

  /**
   * @param options - `maxLineBytes`: longest line handed out whole; `startOffset`: the stream offset of the first pushed byte (default 0).
   */
  constructor(options: { readonly maxLineBytes: number; readonly startOffset?: number }) {
    this.#maxLineBytes = options.maxLineBytes
    this.#offset = options.startOffset ?? 0
  }

  /** Stream offset just after the last pushed byte. */
  get offset(): number {
    return this.#offset
  }

  /**
   * Feeds one chunk; calls `sink` for every line it completes.
   *
   * @param chunk - The next bytes of the stream.
   * @param sink - Receives the lines.
   * @returns True when the sink asked to stop (later pushes are ignored).
   */
  push(chunk: Buffer, sink: LineSink): boolean {
    if (this.#stopped) return true
    const chunkOffset = this.#offset
    this.#offset += chunk.length
    let start = 0
    if (this.#pendingStart !== -1) {
      const newline = chunk.indexOf(NEWLINE)
      if (newline === -1) {
        this.#extendPending(chunk)
        return false
      }
      const length = this.#pendingLength + newline
      const lineStart = this.#pendingStart
      let stop: boolean
      if (this.#oversize || length > this.#maxLineBytes) {
        stop = sink.oversizeLine(lineStart, length)
      } else {
        this.#pieces.push(chunk.subarray(0, newline))
        stop = sink.line(Buffer.concat(this.#pieces, length), lineStart)
      }
      this.#resetPending()
      if (stop) return this.#stop()
      start = newline + 1
    }
    const maxLineBytes = this.#maxLineBytes
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start)
      if (newline === -1) break
      const length = newline - start
      const stop =
        length > maxLineBytes
          ? sink.oversizeLine(chunkOffset + start, length)
          : sink.line(chunk.subarray(start, newline), chunkOffset + start)
      if (stop) return this.#stop()
      start = newline + 1
    }
    if (start < chunk.length) {
      this.#pendingStart = chunkOffset + start
      this.#extendPending(chunk.subarray(start))
    }
    return false
  }

  /**
   * Ends the stream.
   *
   * @returns The bytes after the last `\n` (a line without its terminator), or null when the stream ended on a `\n`.
   */
  finish(): UnterminatedTail | null {
    if (this.#stopped || this.#pendingStart === -1) return null
    const tail: UnterminatedTail = {
      offset: this.#pendingStart,
      length: this.#pendingLength,
      bytes: this.#oversize ? null : Buffer.concat(this.#pieces, this.#pendingLength),
      firstByte: this.#pendingFirstByte,
    }
    this.#resetPending()
    return tail
  }

  #extendPending(bytes: Buffer): void {
    if (this.#pendingLength === 0) this.#pendingFirstByte = bytes[0] ?? -1
    this.#pendingLength += bytes.length
    if (this.#oversize) return
    if (this.#pendingLength > this.#maxLineBytes) {
      this.#oversize = true
      this.#pieces = []
      return
    }
    this.#pieces.push(bytes)
  }

  #resetPending(): void {
    this.#pieces = []
    this.#pendingLength = 0
    this.#pendingStart = -1
    this.#pendingFirstByte = -1
    this.#oversize = false
  }

  #stop(): true {
    this.#stopped = true
    this.#resetPending()
    return true
  }
}
