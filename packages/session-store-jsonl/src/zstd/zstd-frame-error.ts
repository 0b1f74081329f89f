import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why a Zstandard frame could not be read or written. Branch on these, never on `message`. */
export const ZstdFrameErrorCode = {
  /**
   * A frame is damaged: bad structure followed by a valid frame, a decoder failure, a content
   * size that does not match, content not ending on a line boundary. `reason` says which.
   */
  CORRUPT_FRAME: 'CORRUPT_FRAME',
  /** A frame handed to a decoder ends before its last block (or its checksum). `part` says where. */
  TORN_FRAME: 'TORN_FRAME',
  /** A frame needs a larger window than allowed; refused before any allocation. */
  WINDOW_TOO_LARGE: 'WINDOW_TOO_LARGE',
  /** A frame would produce (or declares, or can structurally produce) more bytes than allowed. */
  DECOMPRESSION_LIMIT: 'DECOMPRESSION_LIMIT',
  /** The codec failed to load, aborted, or produced output that is not exactly one frame. */
  CODEC_FAILED: 'CODEC_FAILED',
  /** A caller passed an unusable argument (compression level, frame size, lines not ending in `\n`). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
} as const
export type ZstdFrameErrorCode = (typeof ZstdFrameErrorCode)[keyof typeof ZstdFrameErrorCode]

/** The `reason` of a `CORRUPT_FRAME` error (and of a garbage tail). */
export type ZstdCorruptReason =
  /** Four bytes that are neither a Zstandard nor a skippable frame magic number. */
  | 'unknown-magic'
  /** The frame header descriptor has its reserved bit set. */
  | 'reserved-bit'
  /** A block header has the reserved block type 3. */
  | 'reserved-block-type'
  /** A block is larger than the frame's Block_Maximum_Size, min(window size, 128 KiB). */
  | 'block-too-large'
  /** The frame's block sizes run past the start of a later valid frame (a damaged block header). */
  | 'frame-overruns-next-frame'
  /** The decoder rejected the frame (corrupt compressed data, bad content checksum...). */
  | 'decode-failed'
  /** The decoded size differs from the frame's declared content size. */
  | 'content-size-mismatch'
  /** The frame needs a dictionary; files of this store never use one. */
  | 'dictionary-required'
  /** Bytes follow the one frame a decoder was given. */
  | 'trailing-bytes'
  /** The frame's content does not end with `\n` (Z4: one frame holds whole lines). */
  | 'frame-not-line-aligned'

/** Where a torn (truncated) frame ends. */
export type ZstdTornPart =
  | 'magic'
  | 'frame-header'
  | 'block-header'
  | 'block-data'
  | 'checksum'
  | 'skippable-header'
  | 'skippable-data'

const brand = Symbol.for('@agent-ledger/session-store-jsonl/ZstdFrameError')

/** Options of the {@link ZstdFrameError} constructor: the code, the message and the context fields that apply. */
export interface ZstdFrameErrorOptions {
  readonly code: ZstdFrameErrorCode
  readonly message: string
  /** 0-based index of the frame in its file, counting skippable frames. */
  readonly frameIndex?: number
  /** Byte offset in the compressed file where the problem was found (the frame start for decode errors). */
  readonly compressedOffset?: number
  readonly reason?: ZstdCorruptReason
  readonly part?: ZstdTornPart
  /** The limit that was exceeded (`DECOMPRESSION_LIMIT`, `WINDOW_TOO_LARGE`). */
  readonly limit?: number
  /** Bytes handed out before the limit stopped decoding; always `<= limit`. */
  readonly producedBytes?: number
  /** The window size the frame asks for (`WINDOW_TOO_LARGE`). */
  readonly windowSize?: number
  readonly cause?: unknown
}

/**
 * Thrown (or returned, by the frame scanner) by the Zstandard layer of the JSONL store. The
 * store maps it to its own `JsonlStoreError` codes; the context fields say which frame and
 * which byte.
 */
export class ZstdFrameError extends AgentLedgerError<ZstdFrameErrorCode> {
  override readonly name = 'ZstdFrameError'
  readonly frameIndex: number | undefined
  readonly compressedOffset: number | undefined
  readonly reason: ZstdCorruptReason | undefined
  readonly part: ZstdTornPart | undefined
  readonly limit: number | undefined
  readonly producedBytes: number | undefined
  readonly windowSize: number | undefined
  readonly [brand] = true

  constructor(options: ZstdFrameErrorOptions) {
    super({ code: options.code, message: options.message, cause: options.cause })
    this.frameIndex = options.frameIndex
    this.compressedOffset = options.compressedOffset
    this.reason = options.reason
    this.part = options.part
    this.limit = options.limit
    this.producedBytes = options.producedBytes
    this.windowSize = options.windowSize
  }

  /** True for a `ZstdFrameError` from any copy of this package. */
  static override is(value: unknown): value is ZstdFrameError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
