import { monotonicNow } from './io.ts'
import type { StatusIo } from './io.ts'
import { formatBytes } from './terminal-text.ts'

/** How often a progress line is printed at most. */
const PROGRESS_INTERVAL_MS = 1000

/**
 * Progress lines on stderr for long operations (`verify: 45% (90 MB / 200 MB)`), at most
 * one per {@link PROGRESS_INTERVAL_MS}. Short operations finish before the first line. On a
 * terminal the line is redrawn in place (see statusLineIo in io.ts); elsewhere each update is
 * one line.
 */
export class Progress {
  readonly #io: StatusIo
  readonly #label: string
  readonly #unit: 'bytes' | 'events' | 'sessions'
  readonly #now: () => number
  readonly #enabled: boolean
  #total: number | null
  #last: number

  /**
   * @param io - Where the lines go, and the monotonic clock.
   * @param options - The label (the command), the unit, the total if known, and whether to print at all.
   */
  constructor(
    io: StatusIo,
    options: {
      readonly label: string
      readonly unit: 'bytes' | 'events' | 'sessions'
      readonly total: number | null
      readonly enabled: boolean
    },
  ) {
    this.#io = io
    this.#label = options.label
    this.#unit = options.unit
    this.#total = options.total
    this.#enabled = options.enabled
    this.#now = monotonicNow(io)
    this.#last = this.#now()
  }

  /** Sets the total once it is known. */
  set total(total: number | null) {
    this.#total = total
  }

  /**
   * Reports the amount done so far; prints a line when the interval has passed.
   *
   * @param done - Bytes or events done.
   * @param phase - An optional phase name shown after the label (`migrate (scan)`).
   */
  update(done: number, phase?: string): void {
    if (!this.#enabled) return
    const now = this.#now()
    if (now - this.#last < PROGRESS_INTERVAL_MS) return
    this.#last = now
    const label = phase === undefined ? this.#label : `${this.#label} (${phase})`
    const format = (value: number): string =>
      this.#unit === 'bytes' ? formatBytes(value) : `${value} ${this.#unit}`
    const total = this.#total
    if (total === null || total <= 0) {
      this.#io.status(`${label}: ${format(done)}`)
      return
    }
    const percent = Math.min(100, Math.floor((done / total) * 100))
    this.#io.status(`${label}: ${percent}% (${format(done)} / ${format(total)})`)
  }
}
