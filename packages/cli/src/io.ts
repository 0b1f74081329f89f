import { performance } from 'node:perf_hooks'

import { PAGER_ENV, startPager } from './pager.ts'

/**
 * Where the CLI writes and what it reads from its environment; injected so tests and
 * embedding harnesses can capture output and stop long-running commands.
 */
export interface CliIo {
  /** Writes to standard output (results: reports, events, JSON). */
  stdout(text: string): void
  /** Writes to standard error (errors, warnings, notes, progress). */
  stderr(text: string): void
  /** Resolves when standard output can take more (backpressure on a slow pipe). Default: never waits. */
  drain?(): Promise<void>
  /** Aborting it ends `tail -f` (exit 0). The `agent-ledger` bin aborts it on SIGINT. */
  signal?: AbortSignal
  /** Directory that relative paths are resolved against. Default `process.cwd()`. */
  cwd?: string
  /** Monotonic milliseconds, for progress pacing. Default `performance.now()`. */
  now?(): number
  /** Wall-clock time as ISO-8601, stamped on events the CLI plans in memory. Default `new Date().toISOString()`. */
  clock?(): string
  /** Environment variables (`AGENT_LEDGER_STORE`). Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>
  /** Standard input, for a file or session argument given as `-`. Default: the process's stdin. */
  stdin?: AsyncIterable<Uint8Array>
  /**
   * The width of standard error when it is a terminal; undefined when it is not (a pipe, a
   * file). On a terminal, progress is redrawn in place on one line. Default: undefined.
   */
  stderrColumns?: number
  /** True when standard output is a terminal (`search` highlights its matches there). Default: undefined (not one). */
  stdoutIsTerminal?: boolean
  /**
   * Sends the rest of stdout through a pager when stdout is a terminal (the commands whose
   * output can be long). Returns what waits for the pager to exit after the last write, or
   * null when output stays direct (stdout not a terminal, no pager wanted, its program not
   * found). Default: never pages.
   */
  startPager?(env: Readonly<Record<string, string | undefined>>): { end(): Promise<void> } | null
}

/** {@link CliIo} with one status line on a terminal's stderr: redrawn in place, ended before any other output. */
export interface StatusIo extends CliIo {
  /**
   * Draws `line` as the status line: on a terminal (`stderrColumns`), `\r`, the line cut to
   * the width, clear-to-end-of-line; elsewhere the line and a newline.
   */
  status(line: string): void
  /** Ends a drawn status line with a newline (nothing when none is drawn). */
  endStatus(): void
}

const CLEAR_TO_END = '\u001b[K'

/**
 * Wraps `io` so a progress line drawn in place on a terminal is ended (a newline) before
 * anything else is written to stdout or stderr, and never wraps past the terminal's width.
 *
 * @param io - The CLI's streams.
 * @returns The same streams with {@link StatusIo.status} and {@link StatusIo.endStatus}.
 */
export function statusLineIo(io: CliIo): StatusIo {
  let drawn = false
  const endStatus = (): void => {
    if (!drawn) return
    drawn = false
    io.stderr('\n')
  }
  return {
    ...io,
    stdout(text) {
      endStatus()
      io.stdout(text)
    },
    stderr(text) {
      endStatus()
      io.stderr(text)
    },
    status(line) {
      const columns = io.stderrColumns
      if (columns === undefined) {
        io.stderr(`${line}\n`)
        return
      }
      // One column short of the width: a line that fills it would wrap on some terminals.
      const width = Math.max(1, columns - 1)
      const shown = [...line].slice(0, width).join('')
      io.stderr(`\r${shown}${CLEAR_TO_END}`)
      drawn = true
    },
    endStatus,
  }
}

/**
 * Reads all of standard input (`io.stdin`, else the process's), as UTF-8.
 *
 * @param io - The CLI's streams.
 * @returns The text.
 */
export async function readStdinText(io: CliIo): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of io.stdin ?? process.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array))
  return Buffer.concat(chunks).toString('utf8')
}

/** The process's own streams, with backpressure on stdout, and a pager when stdout is a terminal. */
export function processIo(): CliIo {
  let waiting: Promise<void> | null = null
  let target: NodeJS.WritableStream = process.stdout
  return {
    stdout(text) {
      if (!target.write(text) && waiting === null) {
        const stream = target
        waiting = new Promise((resolve) => {
          stream.once('drain', () => {
            waiting = null
            resolve()
          })
        })
      }
    },
    stderr: (text) => process.stderr.write(text),
    drain: () => waiting ?? Promise.resolve(),
    ...(process.stderr.isTTY ? { stderrColumns: process.stderr.columns || 80 } : {}),
    ...(process.stdout.isTTY ? { stdoutIsTerminal: true } : {}),
    startPager(env) {
      if (process.stdout.isTTY !== true) return null
      const started = startPager(env)
      if (started.pager === null) {
        if (started.missing !== null) {
          process.stderr.write(
            `agent-ledger: warning: pager ${JSON.stringify(started.missing)} not found (from ${PAGER_ENV.join(' or ')}); printing directly\n`,
          )
        }
        return null
      }
      const { pager } = started
      target = pager.child.stdin!
      return {
        end: async () => {
          await pager.end()
          target = process.stdout
        },
      }
    },
  }
}

const BATCH_CHARS = 64 * 1024

/** Buffered standard output: lines are batched into large writes, and the batcher waits for the consumer. */
export class Output {
  readonly #io: CliIo
  #pending: string[] = []
  #pendingChars = 0

  /** @param io - The CLI's streams. */
  constructor(io: CliIo) {
    this.#io = io
  }

  /**
   * Queues text (the caller adds the `\n`); writes when the batch is large.
   *
   * @param text - Text for stdout.
   */
  async write(text: string): Promise<void> {
    this.#pending.push(text)
    this.#pendingChars += text.length
    if (this.#pendingChars >= BATCH_CHARS) await this.flush()
  }

  /** Writes what is queued and waits until stdout can take more. */
  async flush(): Promise<void> {
    if (this.#pending.length > 0) {
      const text = this.#pending.join('')
      this.#pending = []
      this.#pendingChars = 0
      this.#io.stdout(text)
    }
    await this.#io.drain?.()
  }
}

/** The monotonic clock of `io`. */
export function monotonicNow(io: CliIo): () => number {
  return () => (io.now === undefined ? performance.now() : io.now())
}
