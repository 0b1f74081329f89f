import { performance } from 'node:perf_hooks'

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
  /** All of standard input as UTF-8, for a file argument given as `-`. Default: the process's stdin. */
  readStdin?(): Promise<string>
}

/**
 * Reads the process's standard input to its end, as UTF-8.
 *
 * @returns The text.
 */
export async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer))
  return Buffer.concat(chunks).toString('utf8')
}

/** The process's own streams, with backpressure on stdout. */
export function processIo(): CliIo {
  let waiting: Promise<void> | null = null
  return {
    stdout(text) {
      if (!process.stdout.write(text) && waiting === null) {
        waiting = new Promise((resolve) => {
          process.stdout.once('drain', () => {
            waiting = null
            resolve()
          })
        })
      }
    },
    stderr: (text) => process.stderr.write(text),
    drain: () => waiting ?? Promise.resolve(),
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
