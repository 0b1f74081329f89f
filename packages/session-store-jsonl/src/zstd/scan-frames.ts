import { findNextFrame, parseFrameAt } from './frame-format.ts'
import type { ZstdFrameInfo } from './frame-format.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from './zstd-frame-error.ts'
import type { ZstdCorruptReason, ZstdTornPart } from './zstd-frame-error.ts'

/**
 * What follows the last good frame of a scanned input.
 *
 * - `none`: nothing; the input ends on a frame boundary.
 * - `torn`: a frame cut short (inside its magic, header, a block header, block data or
 *   checksum) with no valid frame after it: the torn tail of an interrupted write.
 * - `garbage`: bytes that are not a frame (unknown magic, reserved bits, oversized block)
 *   with no valid frame after them: zeros, random bytes, a foreign tail.
 * - `corrupt`: damaged bytes FOLLOWED by a structurally valid frame: corruption in the middle
 *   (`error` is a `CORRUPT_FRAME` {@link ZstdFrameError} naming the frame index and offset).
 *
 * `offset` is where the classified bytes start (the end of the last good frame) and `bytes`
 * how many bytes follow it up to the end of the input.
 */
export type ZstdScanTail =
  | { readonly kind: 'none'; readonly offset: number; readonly bytes: 0 }
  | { readonly kind: 'torn'; readonly offset: number; readonly bytes: number; readonly part: ZstdTornPart }
  | {
      readonly kind: 'garbage'
      readonly offset: number
      readonly bytes: number
      readonly reason: ZstdCorruptReason
    }
  | {
      readonly kind: 'corrupt'
      readonly offset: number
      readonly bytes: number
      readonly error: ZstdFrameError
    }

/** Summary returned by {@link ZstdFrameScanner.end}. */
export interface ZstdScanSummary {
  /** Offset just after the last good frame (where a writer would truncate a torn tail). */
  readonly goodEnd: number
  readonly tail: ZstdScanTail
  /** Complete Zstandard frames before `goodEnd`. */
  readonly zstdFrameCount: number
  /** Complete skippable frames before `goodEnd` (ignored for content, counted for stats). */
  readonly skippableFrameCount: number
}

/** A complete frame found by {@link ZstdFrameScanner.push}. */
export interface ZstdScannedFrame {
  readonly info: ZstdFrameInfo
  /**
   * The frame's bytes. A view that stays valid only until the next `push` (it may point into
   * the pushed chunk or the scanner's buffer): decode or copy it before pushing again.
   */
  readonly bytes: Uint8Array
}

type ScannerState =
  | { readonly kind: 'frames' }
  | {
      readonly kind: 'suspect'
      readonly offset: number
      readonly part: ZstdTornPart | undefined
      readonly reason: ZstdCorruptReason | undefined
    }
  | { readonly kind: 'corrupt'; readonly offset: number; readonly error: ZstdFrameError }
  | { readonly kind: 'ended'; readonly summary: ZstdScanSummary }

/**
 * An incremental structural scanner of concatenated Zstandard frames (RFC 8878), fed with
 * chunks as a file is read. It parses magic numbers, frame headers and block headers only;
 * it never decompresses and never trusts a decoder's silent prefix.
 *
 * **Details**: complete frames are returned as soon as their last byte arrives. Damage is
 * classified by what follows it: bytes that are not a frame (or a frame cut short) are a tail
 * when no structurally complete frame starts after them, and `CORRUPT_FRAME` corruption when
 * one does (found by searching forward for a magic number from which a complete frame parses).
 *
 * **Gotchas**: memory is the bytes since the last complete frame, i.e. one frame on a healthy
 * file; on a damaged file it can grow to the rest of the input while a candidate frame is
 * pending. A candidate found by the forward search inside damaged bytes could in theory be a
 * chance match (a magic number plus a consistent block chain, far below 2^-32 per byte).
 */
export class ZstdFrameScanner {
  #buffer: Uint8Array = new Uint8Array(0)
  #owned = false
  #start = 0
  #end = 0
  /** Absolute offset of `#buffer[0]`. */
  #base: number
  #total: number
  #needed = 0
  #searchFrom = 0
  #index = 0
  #zstdFrames = 0
  #skippableFrames = 0
  #goodEnd: number
  #state: ScannerState = { kind: 'frames' }

  /**
   * Creates a scanner.
   *
   * @param options - `startOffset`: absolute offset of the first byte that will be pushed
   *   (default 0), so reported offsets are file offsets.
   */
  constructor(options: { readonly startOffset?: number } = {}) {
    this.#base = options.startOffset ?? 0
    this.#total = this.#base
    this.#goodEnd = this.#base
  }

  /** The corruption found so far, if any (scanning stops at the first one). */
  get corruption(): ZstdFrameError | undefined {
    return this.#state.kind === 'corrupt' ? this.#state.error : undefined
  }

  /**
   * Feeds the next chunk of the input.
   *
   * @param chunk - The next bytes (not retained after the call; the caller may reuse it).
   * @returns The frames completed by this chunk, in order. Check {@link corruption} after each call.
   * @throws {@link ZstdFrameError} with code `INVALID_ARGUMENT` after {@link end}.
   */
  push(chunk: Uint8Array): ZstdScannedFrame[] {
    if (this.#state.kind === 'ended') {
      throw new ZstdFrameError({
        code: ZstdFrameErrorCode.INVALID_ARGUMENT,
        message: 'ZstdFrameScanner.push was called after end(): expected no more input, found a chunk.',
      })
    }
    this.#total += chunk.length
    if (this.#state.kind === 'corrupt') return []
    this.#append(chunk)
    const frames = this.#process(false)
    this.#retain()
    return frames
  }

  /**
   * Declares the end of the input and classifies what follows the last good frame.
   *
   * @returns The frames' end offset, the tail classification and the frame counts.
   */
  end(): ZstdScanSummary {
    if (this.#state.kind === 'ended') return this.#state.summary
    if (this.#state.kind !== 'corrupt') this.#process(true)
    const summary: ZstdScanSummary = {
      goodEnd: this.#goodEnd,
      tail: this.#tail(),
      zstdFrameCount: this.#zstdFrames,
      skippableFrameCount: this.#skippableFrames,
    }
    this.#state = { kind: 'ended', summary }
    this.#buffer = new Uint8Array(0)
    return summary
  }

  #tail(): ZstdScanTail {
    const state = this.#state
    const bytes = this.#total - this.#goodEnd
    if (state.kind === 'corrupt') return { kind: 'corrupt', offset: this.#goodEnd, bytes, error: state.error }
    if (state.kind === 'suspect') {
      if (state.part !== undefined) return { kind: 'torn', offset: this.#goodEnd, bytes, part: state.part }
      return { kind: 'garbage', offset: this.#goodEnd, bytes, reason: state.reason ?? 'unknown-magic' }
    }
    return { kind: 'none', offset: this.#goodEnd, bytes: 0 }
  }

  #append(chunk: Uint8Array): void {
    if (chunk.length === 0) return
    if (this.#start === this.#end) {
      this.#base += this.#end
      this.#buffer = chunk
      this.#owned = false
      this.#start = 0
      this.#end = chunk.length
      return
    }
    const pending = this.#end - this.#start
    const needed = pending + chunk.length
    if (!this.#owned || needed > this.#buffer.length) {
      const next = new Uint8Array(Math.max(needed, this.#owned ? this.#buffer.length * 2 : needed, 64 * 1024))
      next.set(this.#buffer.subarray(this.#start, this.#end))
      this.#buffer = next
      this.#owned = true
    } else if (this.#start + needed > this.#buffer.length) {
      this.#buffer.copyWithin(0, this.#start, this.#end)
    } else {
      this.#buffer.set(chunk, this.#end)
      this.#end += chunk.length
      return
    }
    this.#base += this.#start
    this.#start = 0
    this.#end = pending
    this.#buffer.set(chunk, this.#end)
    this.#end += chunk.length
  }

  /** Copies unconsumed bytes out of a caller's chunk, so the caller may reuse its buffer. */
  #retain(): void {
    if (this.#owned || this.#start === this.#end) return
    const pending = this.#buffer.slice(this.#start, this.#end)
    this.#base += this.#start
    this.#buffer = pending
    this.#owned = true
    this.#start = 0
    this.#end = pending.length
  }

  #process(final: boolean): ZstdScannedFrame[] {
    const frames: ZstdScannedFrame[] = []
    for (;;) {
      const state = this.#state
      if (state.kind === 'frames') {
        if (this.#start === this.#end) break
        if (!final && this.#needed > this.#base + this.#end) break
        const parsed = parseFrameAt(this.#buffer, this.#start, { end: this.#end })
        if (parsed.status === 'complete') {
          const info: ZstdFrameInfo = {
            ...parsed.frame,
            index: this.#index,
            offset: this.#base + this.#start,
          }
          frames.push({ info, bytes: this.#buffer.subarray(this.#start, this.#start + info.length) })
          this.#start += info.length
          this.#index += 1
          if (info.kind === 'zstd') this.#zstdFrames += 1
          else this.#skippableFrames += 1
          this.#goodEnd = this.#base + this.#start
          this.#needed = 0
          continue
        }
        if (parsed.status === 'incomplete' && !final) {
          this.#needed = this.#base + parsed.needed
          break
        }
        this.#state = {
          kind: 'suspect',
          offset: this.#base + this.#start,
          part: parsed.status === 'incomplete' ? parsed.part : undefined,
          reason: parsed.status === 'invalid' ? parsed.reason : undefined,
        }
        this.#searchFrom = this.#base + this.#start + 1
        continue
      }
      if (state.kind === 'suspect') {
        const found = findNextFrame(this.#buffer, {
          from: Math.max(this.#searchFrom - this.#base, this.#start),
          end: this.#end,
          final,
        })
        if (found === undefined) {
          if (final) break
          // keep the last 3 bytes: they may begin a magic number completed by the next chunk
          const keepFrom = Math.max(this.#start, this.#end - 3)
          this.#searchFrom = this.#base + keepFrom
          this.#start = keepFrom
          break
        }
        if ('pendingAt' in found) {
          this.#searchFrom = this.#base + found.pendingAt
          this.#start = found.pendingAt
          break
        }
        const nextOffset = this.#base + found.offset
        this.#state = {
          kind: 'corrupt',
          offset: state.offset,
          error: corruptionError(state, this.#index, nextOffset),
        }
        this.#start = this.#end
        break
      }
      break
    }
    return frames
  }
}

function corruptionError(
  suspect: {
    readonly offset: number
    readonly part: ZstdTornPart | undefined
    readonly reason: ZstdCorruptReason | undefined
  },
  frameIndex: number,
  nextOffset: number,
): ZstdFrameError {
  const reason: ZstdCorruptReason = suspect.reason ?? 'frame-overruns-next-frame'
  const found =
    suspect.reason === undefined
      ? `a frame whose blocks run past the start of another frame (cut inside its ${suspect.part ?? 'data'})`
      : `${reason}`
  return new ZstdFrameError({
    code: ZstdFrameErrorCode.CORRUPT_FRAME,
    message: `Frame ${frameIndex} at compressed offset ${suspect.offset} is damaged: expected a valid frame, found ${found}, and a valid frame follows at offset ${nextOffset}.`,
    frameIndex,
    compressedOffset: suspect.offset,
    reason,
  })
}

/** Result of {@link scanFrames}: every good frame plus the classification of what follows them. */
export interface ZstdScanResult extends ZstdScanSummary {
  /** The good frames, in order, with absolute offsets (slice the input with `offset` and `length`). */
  readonly frames: readonly ZstdFrameInfo[]
}

/**
 * Scans concatenated frames held in memory: a convenience over {@link ZstdFrameScanner}.
 *
 * @param bytes - The compressed input.
 * @param startOffset - Where to start (default 0); reported offsets stay relative to `bytes`.
 * @returns The good frames and the tail (`none`, `torn`, `garbage` or `corrupt`).
 */
export function scanFrames(bytes: Uint8Array, startOffset = 0): ZstdScanResult {
  const scanner = new ZstdFrameScanner({ startOffset })
  const frames = scanner.push(bytes.subarray(startOffset)).map((frame) => frame.info)
  return { ...scanner.end(), frames }
}
