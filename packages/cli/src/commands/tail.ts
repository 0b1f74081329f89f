import { constants } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

import { coreEventRegistry } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'
import {
  DEFAULT_STORE_LIMITS,
  LineSplitter,
  LOG_FILE_NAME,
  LogScanner,
  V4_FORMAT,
} from '@agent-ledger/session-store-jsonl'
import type { LineSink } from '@agent-ledger/session-store-jsonl'

import { flag, JSON_OPTION, seqOption } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { describeEvent } from '../describe-event.ts'
import { displayPath, ioError, resolveSession } from '../session-path.ts'
import type { SessionLocation } from '../session-path.ts'

const HELP = `Usage: agent-ledger tail [-f] [-n N] [--json] [--interval MS] <session>

Prints the last N events of a session (default 10). With -f, keeps following the log
as other processes append to it, until interrupted (Ctrl+C / SIGINT).

Following is strictly READ-ONLY: the file is opened read-only and polled for its size;
only complete (newline-terminated) lines are read, each checked like an open (checksum,
seq, type, projection rules). An unterminated last line is a write in progress, never an
error: it is read again once its newline lands. Nothing is ever truncated, repaired or
locked. If a writer's open repairs a torn tail under the follower (quarantine + truncate),
or the file is replaced, the follower re-reads the log and prints only events it has not
printed yet.

Options:
  -f, --follow        keep following appends until SIGINT
  -n, --lines N       how many existing events to print first (default 10; 0 = none)
  --json              JSON Lines: one event object per line (without the "crc" member)
  --interval MS       polling interval with -f (default 250)
  -h, --help          show this help

Exit codes:
  0  printed; with -f: stopped by SIGINT
  1  damage found in the log (printed on stderr), or its header is refused
  2  usage or I/O error; with -f also when the log file disappears (compressed or
     migrated into another generation): FILE_GONE
`

const READ_CHUNK_BYTES = 1024 * 1024
/** Suspect (failing) lines after the last good one are re-checked against the file on every poll up to this size. */
const MAX_TRACKED_SUSPECT_BYTES = 16 * 1024 * 1024

/** What a follower prints, and how. */
interface FollowOptions {
  readonly json: boolean
  readonly lines: number
  readonly follow: boolean
  readonly intervalMs: number
}

/** Incremental, read-only reader of one v4 log file. */
class LogFollower {
  readonly #context: CommandContext
  readonly #location: SessionLocation
  readonly #emit: (event: LoggedEvent) => void
  #handle: FileHandle | null = null
  #ino = -1
  #splitter = new LineSplitter({ maxLineBytes: DEFAULT_STORE_LIMITS.maxLineBytes })
  #scanner!: LogScanner
  #projection!: Projection
  /** Offset after the last complete line handed to the scanner. */
  #consumed = 0
  /** Offset after the last line the scanner accepted. */
  #goodEnd = 0
  #lineEnd = 0
  #suspect: Buffer | null = null
  /** Seq of the last event handed to `emit`; only later seqs are emitted (after a restart too). */
  lastEmittedSeq = -1

  constructor(context: CommandContext, location: SessionLocation, emit: (event: LoggedEvent) => void) {
    this.#context = context
    this.#location = location
    this.#emit = emit
    this.#reset()
  }

  get #shownLog(): string {
    return displayPath(this.#location.logFile, this.#context.cwd)
  }

  #reset(): void {
    this.#splitter = new LineSplitter({ maxLineBytes: DEFAULT_STORE_LIMITS.maxLineBytes })
    this.#projection = createProjection({ registry: coreEventRegistry })
    this.#consumed = 0
    this.#goodEnd = 0
    this.#lineEnd = 0
    this.#suspect = null
    this.#scanner = new LogScanner({
      format: V4_FORMAT,
      limits: DEFAULT_STORE_LIMITS,
      registry: coreEventRegistry,
      file: `${this.#location.id}/${LOG_FILE_NAME}`,
      onEvent: (event, where) => {
        this.#projection.apply(event)
        this.#goodEnd = where.offset + where.bytes.length + 1
        if (event.seq > this.lastEmittedSeq) {
          this.lastEmittedSeq = event.seq
          this.#emit(event)
        }
      },
      onHeader: (_header, where) => {
        this.#goodEnd = where.offset + where.bytes.length + 1
        return false
      },
    })
  }

  async open(): Promise<void> {
    let stats
    try {
      // O_NONBLOCK: a FIFO at the log's name never blocks the open; only a regular file is followed.
      this.#handle = await open(
        this.#location.logFile,
        constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
      )
      stats = await this.#handle.stat()
      this.#ino = stats.ino
    } catch (error) {
      throw ioError(error, { path: this.#shownLog, doing: 'open' })
    }
    if (!stats.isFile()) {
      await this.close()
      throw new CliError({
        code: CliErrorCode.IO_ERROR,
        message: `cannot follow ${this.#shownLog}: expected a regular file, found a special file (FIFO, socket or device)`,
        path: this.#shownLog,
        details: { cause: 'NOT_REGULAR_FILE' },
      })
    }
  }

  async close(): Promise<void> {
    await this.#handle?.close().catch(() => undefined)
    this.#handle = null
  }

  async #restart(): Promise<void> {
    await this.close()
    this.#reset()
    await this.open()
  }

  /**
   * Reads what was appended since the last poll (complete lines only) and emits the new events.
   *
   * @returns Damage found (exit 1), or null.
   * @throws {@link CliError} `FILE_GONE` when the log file was removed.
   */
  async poll(): Promise<JsonlDamage | null> {
    let size: number
    try {
      const stats = await stat(this.#location.logFile)
      if (stats.ino !== this.#ino) {
        this.#context.notice('note', `${this.#shownLog} was replaced; re-reading it`)
        await this.#restart()
      }
      size = stats.size
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') {
        throw new CliError({
          code: CliErrorCode.FILE_GONE,
          message: `${this.#shownLog} was removed while following it (compressed or migrated into another generation?): expected the log to stay, found no file`,
          path: this.#shownLog,
        })
      }
      throw ioError(error, { path: this.#shownLog, doing: 'stat' })
    }
    if (size < this.#consumed || !(await this.#suspectUnchanged())) {
      // A writer's open repaired a torn tail under us (quarantine + truncate, then appends).
      await this.#restart()
    }
    const handle = this.#handle!
    let position = this.#consumed
    while (position < size) {
      const length = Math.min(READ_CHUNK_BYTES, size - position)
      const buffer = Buffer.allocUnsafe(length)
      const { bytesRead } = await handle.read(buffer, 0, length, position)
      if (bytesRead === 0) break
      position += bytesRead
      if (this.#splitter.push(buffer.subarray(0, bytesRead), this.#sink())) break
    }
    if (this.#scanner.done) {
      const outcome = this.#scanner.finish(null, this.#lineEnd)
      return outcome.damage === null ? null : { error: outcome.damage }
    }
    // Bytes after the last newline are a write in progress: never handed to the scanner.
    this.#consumed = this.#lineEnd
    this.#splitter = new LineSplitter({
      maxLineBytes: DEFAULT_STORE_LIMITS.maxLineBytes,
      startOffset: this.#consumed,
    })
    await this.#trackSuspect()
    return null
  }

  #sink(): LineSink {
    return {
      line: (bytes, offset) => {
        this.#lineEnd = offset + bytes.length + 1
        return this.#scanner.line(bytes, offset)
      },
      oversizeLine: (offset, length) => {
        this.#lineEnd = offset + length + 1
        return this.#scanner.oversizeLine(offset, length)
      },
    }
  }

  /** Lines that failed the checks after the last good line: keep their bytes to notice a repair replacing them. */
  async #trackSuspect(): Promise<void> {
    const length = this.#consumed - this.#goodEnd
    if (length <= 0 || length > MAX_TRACKED_SUSPECT_BYTES) {
      this.#suspect = null
      return
    }
    if (this.#suspect?.length === length) return
    this.#suspect = await this.#readAt(this.#goodEnd, length)
  }

  async #suspectUnchanged(): Promise<boolean> {
    const suspect = this.#suspect
    if (suspect === null) return true
    const now = await this.#readAt(this.#goodEnd, suspect.length)
    return now.equals(suspect)
  }

  async #readAt(position: number, length: number): Promise<Buffer> {
    const buffer = Buffer.alloc(length)
    const { bytesRead } = await this.#handle!.read(buffer, 0, length, position)
    return buffer.subarray(0, bytesRead)
  }
}

interface JsonlDamage {
  readonly error: Error
}

async function runTail(
  context: CommandContext,
  location: SessionLocation,
  options: FollowOptions,
): Promise<number> {
  const format = (event: LoggedEvent): string =>
    `${options.json ? stringifyJson(event) : describeEvent(event)}\n`
  const queue: LoggedEvent[] = []
  let live = false
  const follower = new LogFollower(context, location, (event) => {
    queue.push(event)
    // Before following, only the last N existing events are printed.
    if (!live && queue.length > options.lines) queue.shift()
  })
  const printQueued = async (): Promise<void> => {
    for (const event of queue) await context.out.write(format(event))
    queue.length = 0
    await context.out.flush()
  }
  context.root = location.root
  await follower.open()
  try {
    let damage = await follower.poll()
    live = true
    await printQueued()
    const signal = context.io.signal
    while (damage === null && options.follow && signal?.aborted !== true) {
      try {
        await sleep(options.intervalMs, undefined, signal === undefined ? {} : { signal })
      } catch {
        break
      }
      damage = await follower.poll()
      await printQueued()
    }
    if (damage !== null) throw damage.error
    return ExitCode.OK
  } finally {
    await follower.close()
  }
}

/** `agent-ledger tail`: the last events, and `-f` to follow a live session read-only. */
export const tailCommand: CommandSpec = {
  name: 'tail',
  summary: 'last events of a session; -f follows a live session read-only until SIGINT',
  help: HELP,
  streams: true,
  options: {
    follow: { type: 'boolean', short: 'f' },
    lines: { type: 'string', short: 'n' },
    json: JSON_OPTION,
    interval: { type: 'string' },
  },
  positionals: ['<session>'],
  async run(context, args) {
    const lines = seqOption(args, { command: 'tail', name: 'lines' }) ?? 10
    const intervalMs = seqOption(args, { command: 'tail', name: 'interval' }) ?? 250
    if (intervalMs < 10 || intervalMs > 60_000) {
      throw usageError(`tail: expected --interval between 10 and 60000 ms, found ${intervalMs}`)
    }
    const location = await resolveSession(args.positionals[0]!, context.cwd)
    return runTail(context, location, {
      json: flag(args, 'json'),
      lines,
      follow: flag(args, 'follow'),
      intervalMs,
    })
  },
}
