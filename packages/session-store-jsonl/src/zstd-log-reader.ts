/*
 * Reading a `.zstd` log (issue 5, Zstandard): frames to the SAME line pipeline as a plain log.
 *
 * Pipeline per frame, in file order:
 *   1. the structural scanner (`ZstdFrameScanner`) hands out complete frames; it never
 *      decodes and never trusts a decoder's silent prefix;
 *   2. CHECK pass: decode the frame bounded (`maxFrameOutputBytes`, `maxWindowBytes`: S4),
 *      split it into lines on 0x0A, and check that it ends on a line boundary (Z4) and that
 *      every line carries a valid CRC-32C (the header line: that it decodes as a header, or is
 *      a header this library must refuse, like a newer version);
 *   3. FEED pass, only for a frame that passed: its lines go through `LineSplitter` +
 *      `LogScanner`, exactly as a plain log's (checks, seq, type, projection via `onEvent`).
 *      A frame up to `RETAIN_BYTES` of content is kept from the check pass; a larger one (only
 *      foreign files have them) is decoded a second time.
 *
 * So no event of a frame is delivered before the whole frame has been verified: what a read
 * sees is exactly what a write open keeps (frames are the unit of repair).
 *
 * Classification, the torn-tail rule of plain logs applied to frames:
 *   - a frame that fails to decode, or holds a line failing its checksum, is SUSPECT; if no
 *     later frame passes the check pass, it and everything after it is a torn tail
 *     (`tailGarbage`), else it is `CORRUPT_FRAME` (damage in the middle, Z3);
 *   - a frame cut short with nothing complete after it is a torn tail (`unterminated`: a write
 *     cut short, Z1); bytes that are not a frame are a torn tail (`tailGarbage`, Z2); structural
 *     damage followed by a complete frame is `CORRUPT_FRAME` (Z3, Z5 unknown magic mid-file);
 *   - a decodable frame whose content does not end with `\n` is always `CORRUPT_FRAME`
 *     (`frame-not-line-aligned`, Z4): a crash cannot produce it, a writer bug or tampering can;
 *   - `DECOMPRESSION_LIMIT` and `WINDOW_TOO_LARGE` are always refusals, never a tail (S4);
 *   - skippable frames are ignored and counted (Z5).
 */
import type { FileHandleOps } from './fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import type { StoreLimits } from './limits.ts'
import { decodeLine, verifyLineChecksum } from './line-codec.ts'
import { LineSplitter } from './line-splitter.ts'
import type { LineSink } from './line-splitter.ts'
import { LogScanner, resumeAfter } from './log-scanner.ts'
import type { LineLocation, ScannerOptions, ScanOutcome, TornTail } from './log-scanner.ts'
import { drain, readFileChunks } from './read-log.ts'
import type { ByteSource } from './read-log.ts'
import { ZstdFrameScanner } from './zstd/scan-frames.ts'
import type { ZstdScannedFrame } from './zstd/scan-frames.ts'
import type { ZstdCodec } from './zstd/zstd-codec.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd/zstd-frame-error.ts'

/** Content bytes of one frame kept from the check pass for the feed pass; larger frames are decoded twice. */
export const RETAIN_BYTES = 8 * 1024 * 1024

/** The limits a `.zstd` read needs (a subset of the store's limits). */
export type ZstdReadLimits = Pick<
  StoreLimits,
  'maxLineBytes' | 'maxDepth' | 'readChunkBytes' | 'maxFrameOutputBytes' | 'maxWindowBytes'
>

/** Options of {@link scanZstdLog} and {@link scanZstdLogChunks}: the plain scanner's, plus the codec and limits. */
export interface ZstdScanOptions extends Omit<ScannerOptions, 'limits' | 'resume'> {
  readonly limits: ZstdReadLimits
  /** The codec (see `loadZstdCodec`). */
  readonly codec: ZstdCodec
  /** Stop reading at this compressed offset (default: the end of the file). Only for {@link scanZstdLog}. */
  readonly end?: number
  /** Receives the plain content of every frame that passed, in order (a view valid during the call). */
  readonly onPlain?: (chunk: Uint8Array) => void
  /**
   * Lines mode only: the source starts at the frame at compressed offset `offset`, whose
   * first line follows event `lastSeq` and starts at plain offset `plainOffset` (a seek
   * point); the frames before it are not read.
   */
  readonly from?: { readonly offset: number; readonly plainOffset: number; readonly lastSeq: number }
}

/** Frame counters of a `.zstd` scan. */
export interface ZstdLogStats {
  /** Zstandard frames that passed (header frame included). */
  readonly frames: number
  /** Skippable frames met before the good end (ignored, Z5). */
  readonly skippableFrames: number
  /** Plain bytes of the good frames (the size `zstd -d` would give for the good prefix). */
  readonly plainBytes: number
  /** Compressed offset of the last good Zstandard frame (-1 when none). */
  readonly lastFrameOffset: number
  /**
   * The last good frame holding event lines (lines mode only, else null): its compressed
   * offset, the plain offset and 1-based number of its first line, and that line's checksum
   * member. Where a read of the log's last events can start (a checkpoint's seek point).
   */
  readonly lastEventFrame: {
    readonly offset: number
    readonly plainOffset: number
    readonly firstLine: number
    readonly firstCrc: string
  } | null
  /** Plain offset just after the header line's `\n` (0 when there is no header). */
  readonly plainHeaderEnd: number
  /** Plain offset just after the last good line (damage inside a frame leaves the lines before it good). */
  readonly plainGoodEnd: number
  /**
   * The sealed prefix: the header frame, then every frame of at least
   * {@link SEALED_FRAME_MIN_BYTES} of content up to the first smaller one. A reseal copies it
   * byte for byte and re-encodes only what follows.
   */
  readonly sealed: {
    readonly frames: number
    /** Compressed offset where the sealed prefix ends. */
    readonly compressedEnd: number
    /** Plain offset where the sealed prefix ends. */
    readonly plainEnd: number
  }
}

/** A scan outcome of a `.zstd` log: byte offsets (`goodEndOffset`, `headerEndOffset`, `bytesRead`, `tornTail`) are COMPRESSED offsets; line damage keeps the plain `offset` of its line with `details.frameIndex` and `details.compressedOffset`. */
export interface ZstdScanOutcome extends ScanOutcome {
  readonly zstd: ZstdLogStats
}

/** A frame is "sealed" (left alone by a reseal) when its content is at least this big: half the 4 MiB target. */
export const SEALED_FRAME_MIN_BYTES = 2 * 1024 * 1024

/** What the check pass found in one frame. */
type FrameVerdict =
  | {
      readonly kind: 'good'
      readonly content: Uint8Array[] | null
      readonly plainBytes: number
      readonly lines: number
    }
  | {
      readonly kind: 'suspect'
      readonly reason: string
      readonly line?: number
      readonly contentOffset?: number
    }
  | { readonly kind: 'damage'; readonly reason: string }
  | { readonly kind: 'refused'; readonly error: ZstdFrameError }

interface Suspect {
  readonly index: number
  readonly offset: number
  readonly reason: string
  readonly line: number | undefined
}

/**
 * Maps a {@link ZstdFrameError} to the store's error: `CORRUPT_FRAME`/`TORN_FRAME` to
 * `CORRUPT_FRAME`, `DECOMPRESSION_LIMIT` and `WINDOW_TOO_LARGE` as they are, `CODEC_FAILED` (and anything else) to `READ_FAILED`.
 *
 * @param error - The zstd layer's error.
 * @param context - The file (relative to the root), the last good seq, the frame when the error lacks it.
 * @returns The typed store error.
 */
export function zstdStoreError(
  error: ZstdFrameError,
  context: {
    readonly file: string
    readonly lastGoodSeq?: number
    readonly frameIndex?: number
    readonly compressedOffset?: number
  },
): JsonlStoreError {
  const frameIndex = error.frameIndex ?? context.frameIndex
  const compressedOffset =
    error.compressedOffset !== undefined &&
    context.compressedOffset !== undefined &&
    error.frameIndex === undefined
      ? context.compressedOffset + error.compressedOffset
      : (error.compressedOffset ?? context.compressedOffset)
  const code =
    error.code === ZstdFrameErrorCode.DECOMPRESSION_LIMIT
      ? JsonlErrorCode.DECOMPRESSION_LIMIT
      : error.code === ZstdFrameErrorCode.WINDOW_TOO_LARGE
        ? JsonlErrorCode.WINDOW_TOO_LARGE
        : error.code === ZstdFrameErrorCode.CORRUPT_FRAME || error.code === ZstdFrameErrorCode.TORN_FRAME
          ? JsonlErrorCode.CORRUPT_FRAME
          : JsonlErrorCode.READ_FAILED
  const where =
    frameIndex === undefined ? '' : ` (frame ${frameIndex} at compressed offset ${String(compressedOffset)})`
  return new JsonlStoreError({
    code,
    message: `${context.file}${where}: ${error.message}`,
    file: context.file,
    offset: compressedOffset,
    lastGoodSeq: context.lastGoodSeq,
    details: {
      ...(frameIndex === undefined ? {} : { frameIndex }),
      ...(compressedOffset === undefined ? {} : { compressedOffset }),
      ...(error.reason === undefined ? {} : { reason: error.reason }),
      ...(error.part === undefined ? {} : { part: error.part }),
      ...(error.limit === undefined ? {} : { limit: error.limit }),
      ...(error.producedBytes === undefined ? {} : { producedBytes: error.producedBytes }),
      ...(error.windowSize === undefined ? {} : { windowSize: error.windowSize }),
      zstdCode: error.code,
    },
    cause: error,
  })
}

function corruptFrame(
  file: string,
  suspect: {
    readonly index: number
    readonly offset: number
    readonly reason: string
    readonly line?: number | undefined
  },
  context: { readonly lastGoodSeq: number; readonly followedBy: string },
): JsonlStoreError {
  const { lastGoodSeq, followedBy } = context
  return new JsonlStoreError({
    code: JsonlErrorCode.CORRUPT_FRAME,
    message: `Frame ${suspect.index} of ${file} (compressed offset ${suspect.offset}) is damaged: expected a frame of whole, checksummed lines, found ${suspect.reason}${suspect.line === undefined ? '' : ` at line ${suspect.line}`}, ${followedBy}.`,
    file,
    offset: suspect.offset,
    line: suspect.line,
    lastGoodSeq,
    details: { frameIndex: suspect.index, compressedOffset: suspect.offset, reason: suspect.reason },
  })
}

/** Adds the frame to an error found by the plain scanner inside a frame. */
function withFrame(error: JsonlStoreError, frame: ZstdScannedFrame): JsonlStoreError {
  return new JsonlStoreError({
    code: error.code,
    message: `${error.message} (in frame ${frame.info.index} at compressed offset ${frame.info.offset})`,
    file: error.file,
    line: error.line,
    offset: error.offset,
    seq: error.seq,
    lastGoodSeq: error.lastGoodSeq,
    details: { ...error.details, frameIndex: frame.info.index, compressedOffset: frame.info.offset },
    cause: error.cause ?? error,
  })
}

/**
 * The check pass of one frame: bounded decode, line alignment, every line's checksum.
 * Never throws for the frame's content; throws only `CODEC_FAILED` (the codec itself broke).
 */
function checkFrame(
  frame: ZstdScannedFrame,
  options: ZstdScanOptions,
  context: { readonly headerFrame: boolean; readonly firstLine: number },
): FrameVerdict {
  const { codec, limits } = options
  const retained: Uint8Array[] = []
  let retainedBytes = 0
  let keep = true
  let lines = 0
  let bad: { reason: string; line: number; contentOffset: number } | undefined
  /** A decodable first frame whose header line fails: never a crash artefact (the header frame is durable before the log is visible). */
  let badHeader = false
  const splitter = new LineSplitter({ maxLineBytes: limits.maxLineBytes })
  const sink: LineSink = {
    line(bytes, offset) {
      lines += 1
      if (bad !== undefined) return false
      if (context.headerFrame && lines === 1) {
        // A header this library must refuse (a newer version) passes: the feed pass refuses it, touching nothing.
        if (!decodeLine(bytes, limits).ok) {
          bad = { reason: 'header-line-failing-its-checks', line: context.firstLine, contentOffset: offset }
          badHeader = true
        }
        return false
      }
      if (!verifyLineChecksum(bytes)) {
        bad = { reason: 'line-checksum', line: context.firstLine + lines - 1, contentOffset: offset }
      }
      return false
    },
    oversizeLine() {
      // Never buffered: the feed pass reports it as LINE_TOO_LARGE (as a plain log's).
      lines += 1
      return false
    },
  }
  let plainBytes: number
  try {
    plainBytes = codec.decompressFrameChunks(
      frame.bytes,
      { maxOutputBytes: limits.maxFrameOutputBytes, maxWindowBytes: limits.maxWindowBytes },
      (chunk) => {
        const view = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        splitter.push(view, sink)
        if (!keep) return
        if (retainedBytes + chunk.byteLength > RETAIN_BYTES) {
          keep = false
          retained.length = 0
          return
        }
        retained.push(chunk)
        retainedBytes += chunk.byteLength
      },
    )
  } catch (error) {
    if (!ZstdFrameError.is(error)) throw error
    if (
      error.code === ZstdFrameErrorCode.DECOMPRESSION_LIMIT ||
      error.code === ZstdFrameErrorCode.WINDOW_TOO_LARGE
    ) {
      return { kind: 'refused', error }
    }
    if (error.code === ZstdFrameErrorCode.CODEC_FAILED || error.code === ZstdFrameErrorCode.INVALID_ARGUMENT)
      throw error
    if (error.reason === 'dictionary-required') return { kind: 'damage', reason: 'dictionary-required' }
    return { kind: 'suspect', reason: error.reason ?? 'decode-failed' }
  }
  if (splitter.finish() !== null) return { kind: 'damage', reason: 'frame-not-line-aligned' }
  if (badHeader) return { kind: 'damage', reason: 'header-line-failing-its-checks' }
  if (bad !== undefined)
    return { kind: 'suspect', reason: bad.reason, line: bad.line, contentOffset: bad.contentOffset }
  return { kind: 'good', content: keep ? retained : null, plainBytes, lines }
}

/**
 * Scans a `.zstd` log chunk by chunk (see the pipeline at the top of this file): yields after
 * each chunk of the file so a caller can hand out the events `onEvent` collected, and returns
 * the outcome.
 *
 * @param source - The log's compressed bytes, from its start.
 * @param options - The plain scanner's options (limits, registry, file, onEvent, onHeader, stopBeforeLine) plus the codec.
 * @returns A generator whose return value is the {@link ZstdScanOutcome} (damage returned, not thrown).
 * @throws {@link ZstdFrameError} `CODEC_FAILED` when the codec itself fails; file-system errors from reads.
 */
export async function* scanZstdLogChunks(
  source: ByteSource,
  options: ZstdScanOptions,
): AsyncGenerator<void, ZstdScanOutcome, undefined> {
  const { limits, file, from } = options
  // Lines mode: the first line of each frame is noted, for `lastEventFrame`.
  let frameFirst: { line: number; crc: string | null } = { line: -1, crc: null }
  const onLine = options.onLine
  const scanner = new LogScanner({
    ...options,
    limits,
    ...(onLine === undefined
      ? {}
      : {
          onLine: (location: LineLocation, value?: Record<string, unknown>, text?: string) => {
            if (location.line === frameFirst.line)
              frameFirst.crc = location.bytes.toString(
                'latin1',
                location.bytes.length - 10,
                location.bytes.length - 2,
              )
            return onLine(location, value, text)
          },
        }),
    ...(from === undefined ? {} : { resume: resumeAfter(from) }),
  })
  const frames = new ZstdFrameScanner(from === undefined ? {} : { startOffset: from.offset })
  let bytesRead = from?.offset ?? 0
  let plainOffset = from?.plainOffset ?? 0
  let goodEnd = from?.offset ?? 0
  let headerEnd = 0
  // Resumed: the header frame (and every frame before the seek point) passed before.
  let goodFrames = from === undefined ? 0 : 1
  let skippable = 0
  let lastFrameOffset = -1
  let lastEventFrame: ZstdLogStats['lastEventFrame'] = null
  let sealedOpen = true
  const sealed = { frames: 0, compressedEnd: 0, plainEnd: 0 }
  let linesSeen = from === undefined ? 0 : from.lastSeq + 2
  let suspect = null as Suspect | null
  let damage = null as JsonlStoreError | null
  let stopped = false
  // The frame whose first line repeats an earlier seq: it and every later byte are the tail.
  let fencedFrame = null as { readonly offset: number; readonly line: number } | null

  const feed = (frame: ZstdScannedFrame, verdict: Extract<FrameVerdict, { kind: 'good' }>): void => {
    const splitter = new LineSplitter({ maxLineBytes: limits.maxLineBytes, startOffset: plainOffset })
    const onPlain = options.onPlain
    const push = (chunk: Uint8Array): void => {
      if (scanner.done) return
      onPlain?.(chunk)
      splitter.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), scanner)
    }
    if (verdict.content !== null) {
      for (const chunk of verdict.content) push(chunk)
    } else {
      options.codec.decompressFrameChunks(
        frame.bytes,
        { maxOutputBytes: limits.maxFrameOutputBytes, maxWindowBytes: limits.maxWindowBytes },
        push,
      )
    }
    splitter.finish()
  }

  /** One complete frame from the structural scanner; returns true to stop. */
  const onFrame = (frame: ZstdScannedFrame): boolean => {
    const { info } = frame
    if (fencedFrame !== null) return false
    if (info.kind === 'skippable') {
      if (suspect === null) {
        skippable += 1
        goodEnd = info.offset + info.length
      }
      return false
    }
    const verdict = checkFrame(frame, options, {
      headerFrame: goodFrames === 0 && suspect === null,
      firstLine: linesSeen + 1,
    })
    if (verdict.kind === 'refused') {
      damage = zstdStoreError(verdict.error, {
        file,
        lastGoodSeq: scanner.lastSeq,
        frameIndex: info.index,
        compressedOffset: info.offset,
      })
      return true
    }
    if (verdict.kind === 'damage') {
      damage = corruptFrame(
        file,
        suspect ?? { index: info.index, offset: info.offset, reason: verdict.reason },
        {
          lastGoodSeq: scanner.lastSeq,
          followedBy: suspect === null ? 'which no crash can produce' : 'followed by more damaged frames',
        },
      )
      return true
    }
    if (verdict.kind === 'suspect') {
      suspect ??= { index: info.index, offset: info.offset, reason: verdict.reason, line: verdict.line }
      return false
    }
    if (suspect !== null) {
      damage = corruptFrame(file, suspect, {
        lastGoodSeq: scanner.lastSeq,
        followedBy: `followed by a valid frame at compressed offset ${info.offset}`,
      })
      return true
    }
    frameFirst = { line: linesSeen + 1, crc: null }
    feed(frame, verdict)
    const fenced = scanner.fencedAt
    if (fenced !== null) {
      // A fenced writer's batch is whole frames of its own; a repeat inside a frame is not one.
      if (fenced.offset === plainOffset) {
        fencedFrame = { offset: info.offset, line: fenced.line }
        return false
      }
      damage = new JsonlStoreError({
        code: JsonlErrorCode.SEQ_CONFLICT,
        message: `Line ${fenced.line} of ${file} repeats an earlier seq inside frame ${info.index} (compressed offset ${info.offset}): expected a repeated seq only at the start of a frame (a fenced writer's batch), found it after other lines of the frame.`,
        file,
        line: fenced.line,
        offset: fenced.offset,
        lastGoodSeq: scanner.lastSeq,
        details: { frameIndex: info.index, compressedOffset: info.offset },
      })
      return true
    }
    if (scanner.done) {
      // Damage found by the line pipeline, or a requested stop (header-only reads).
      const outcome = scanner.finish(null, plainOffset + verdict.plainBytes)
      if (outcome.damage !== null) damage = withFrame(outcome.damage, frame)
      stopped = true
      if (goodFrames === 0) headerEnd = info.offset + info.length
      return true
    }
    plainOffset += verdict.plainBytes
    linesSeen += verdict.lines
    goodFrames += 1
    if (goodFrames === 1) headerEnd = info.offset + info.length
    goodEnd = info.offset + info.length
    lastFrameOffset = info.offset
    if (frameFirst.crc !== null && frameFirst.line >= 2 && verdict.lines > 0) {
      lastEventFrame = {
        offset: info.offset,
        plainOffset: plainOffset - verdict.plainBytes,
        firstLine: frameFirst.line,
        firstCrc: frameFirst.crc,
      }
    }
    sealedOpen &&= goodFrames === 1 || verdict.plainBytes >= SEALED_FRAME_MIN_BYTES
    if (sealedOpen) {
      sealed.frames = goodFrames
      sealed.compressedEnd = goodEnd
      sealed.plainEnd = plainOffset
    }
    return false
  }

  /** Structural damage followed by a complete frame: the first suspect frame when there is one. */
  const structuralDamage = (error: ZstdFrameError): JsonlStoreError =>
    suspect === null
      ? zstdStoreError(error, { file, lastGoodSeq: scanner.lastSeq })
      : corruptFrame(file, suspect, { lastGoodSeq: scanner.lastSeq, followedBy: 'followed by a valid frame' })

  let finished = false
  for await (const chunk of source) {
    bytesRead += chunk.length
    for (const frame of frames.push(chunk)) {
      if (onFrame(frame)) {
        finished = true
        break
      }
    }
    if (!finished && fencedFrame === null && frames.corruption !== undefined) {
      damage = structuralDamage(frames.corruption)
      finished = true
    }
    yield
    if (finished) break
  }

  let tornTail: TornTail | null = null
  if (!finished) {
    const summary = frames.end()
    if (fencedFrame !== null) {
      tornTail = {
        offset: fencedFrame.offset,
        bytes: bytesRead - fencedFrame.offset,
        reason: 'fenced-writer',
        line: fencedFrame.line,
      }
    } else if (summary.tail.kind === 'corrupt') {
      damage = structuralDamage(summary.tail.error)
    } else if (suspect !== null) {
      tornTail = {
        offset: suspect.offset,
        bytes: bytesRead - suspect.offset,
        reason: 'tailGarbage',
        line: linesSeen + 1,
      }
    } else if (summary.tail.kind !== 'none') {
      tornTail = {
        offset: goodEnd,
        bytes: bytesRead - goodEnd,
        reason: summary.tail.kind === 'torn' ? 'unterminated' : 'tailGarbage',
        line: linesSeen + 1,
      }
    }
  }
  const plain = scanner.finish(null, plainOffset)
  const finalDamage = damage ?? (stopped ? null : plain.damage)
  return {
    ...plain,
    headerMissing: plain.headerMissing && finalDamage === null,
    goodEndOffset: goodEnd,
    headerEndOffset: headerEnd,
    bytesRead,
    tornTail: finalDamage === null ? tornTail : null,
    damage: finalDamage,
    zstd: {
      frames: goodFrames,
      skippableFrames: skippable,
      plainBytes: plainOffset,
      lastFrameOffset,
      lastEventFrame,
      plainHeaderEnd: plain.headerEndOffset,
      plainGoodEnd: plain.goodEndOffset,
      sealed,
    },
  }
}

/**
 * Scans a whole `.zstd` log (see {@link scanZstdLogChunks}).
 *
 * @param handle - The open log.
 * @param options - Scanner options plus the codec.
 * @returns What the scan found; damage is returned, not thrown.
 */
export async function scanZstdLog(handle: FileHandleOps, options: ZstdScanOptions): Promise<ZstdScanOutcome> {
  const source = readFileChunks(handle, {
    chunkBytes: options.limits.readChunkBytes,
    ...(options.end === undefined ? {} : { end: options.end }),
  })
  return drain(scanZstdLogChunks(source, options))
}

/**
 * The plain content of the frames of a `.zstd` log, frame by frame, without any check beyond
 * the bounded decode (for re-reading a file already scanned: a line lookup, a comparison).
 * Stops quietly at the first frame that does not decode, and at a torn or damaged tail.
 *
 * @param handle - The open log.
 * @param options - Codec and limits; `end`: stop at this compressed offset.
 * @returns The content, in chunks.
 */
export async function* zstdPlainSource(
  handle: FileHandleOps,
  options: {
    readonly codec: ZstdCodec
    readonly limits: ZstdReadLimits
    /** Compressed offset of a frame to start at (default 0). */
    readonly start?: number
    /** Compressed offset to stop at (default: the end of the file). */
    readonly end?: number
  },
): AsyncGenerator<Buffer, void, undefined> {
  const { codec, limits } = options
  const frames = new ZstdFrameScanner({ startOffset: options.start ?? 0 })
  const source = readFileChunks(handle, {
    chunkBytes: limits.readChunkBytes,
    ...(options.start === undefined ? {} : { start: options.start }),
    ...(options.end === undefined ? {} : { end: options.end }),
  })
  for await (const chunk of source) {
    for (const frame of frames.push(chunk)) {
      if (frame.info.kind === 'skippable') continue
      const pieces: Buffer[] = []
      try {
        codec.decompressFrameChunks(
          frame.bytes,
          { maxOutputBytes: limits.maxFrameOutputBytes, maxWindowBytes: limits.maxWindowBytes },
          (piece) => pieces.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength)),
        )
      } catch (error) {
        if (ZstdFrameError.is(error) && error.code !== ZstdFrameErrorCode.CODEC_FAILED) return
        throw error
      }
      yield* pieces
    }
    if (frames.corruption !== undefined) return
  }
}
