import { createHash } from 'node:crypto'
import { open, stat } from 'node:fs/promises'

import { ImportError, ImportErrorCode, importLive, splitLines } from '@agent-ledger/import'
import type { LiveImport, SourceFormat } from '@agent-ledger/import'

import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { terminalSafe } from '../terminal-text.ts'
import type { ImportSourceFile } from './import-sources.ts'
import { importOne, StoreSink } from './import-write.ts'
import type { SourceOutcome } from './import-write.ts'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { appendEvents, completeEnd, readRange, sameBytes } from './import-follow-file.ts'

/** What `import --follow` needs. */
export interface FollowRequest {
  readonly source: ImportSourceFile
  readonly file: string
  readonly from: SourceFormat | 'auto'
  readonly lenient: boolean
  readonly store: SessionStore
  readonly setTime: (time: string) => void
  readonly json: boolean
  readonly pollMs: number
  readonly root: string
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve()
      return
    }
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** A size and modification time, to tell whether a source changed since the last poll. */
async function fingerprint(path: string): Promise<string | null> {
  try {
    const info = await stat(path)
    return `${info.size}:${info.mtimeMs}:${info.ino}`
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null
    throw error
  }
}

/** A source with no complete record yet is waited for, not refused. */
function notYet(error: unknown): boolean {
  return ImportError.is(error) && error.code === ImportErrorCode.EMPTY_SOURCE
}

/** How a follow went: what each change cost. */
interface FollowStats {
  /** Changes taken by appending the new lines to the live import (no re-read). */
  appends: number
  /** Whole imports of the source: the first, and each re-import. */
  fullImports: number
  /** Bytes read from the source: the whole file per pass of a whole import, the new bytes for an append. */
  bytesRead: number
  /** Of `bytesRead`, the bytes read by appends (each appended byte once). */
  appendedBytes: number
  /** Why each re-import after the first was needed. */
  reimports: string[]
}

/** The live state of a plain file followed by appending: where its complete lines end. */
interface Tracked {
  readonly live: LiveImport
  readonly id: string
  readonly ino: number
  /** Bytes imported (up to the last newline). */
  offset: number
  /** The last bytes before `offset` (checked on each change: a rewritten file is imported again). */
  tail: Buffer
  records: number
}

const TAIL_BYTES = 256

/**
 * `import --follow`: imports a source an agent is still writing, and keeps following it until
 * the signal aborts (SIGINT). While following, the import is live: it hands over only what the
 * complete lines settle (no repair closers, no message still being merged, no forks), and the
 * session's writer stays open, so the session grows by exactly the events a one-shot import of
 * the grown source would have there. A last line still being written is waited for.
 *
 * A plain file is read once: on a change only the bytes appended since the last poll are read,
 * and their complete lines go to the live import kept from before (its index and builder),
 * whose new events are appended. The source is imported again whole (as the first time) only
 * when that cannot hold: the file shrank or was replaced or rewritten, a line is not JSON, the
 * header facts changed, a Claude Code record does not extend the main path's leaf (a branch
 * switch), a format mapped from the whole file (pi, an OpenHands trajectory), a compressed
 * rollout or an events directory. The output says which path each change took.
 *
 * On abort, one final import closes what the source left open (placeholders, the open turn)
 * and adds the forks: the session then equals a one-shot import of the source as it stands.
 */
export async function followSource(context: CommandContext, request: FollowRequest): Promise<number> {
  const { source, file } = request
  const signal = context.io.signal
  const writers = new Map<string, SessionWriter>()
  const progress = new Progress(context.io, {
    label: `import --follow ${file}`,
    unit: 'bytes',
    total: null,
    enabled: context.progressEnabled,
  })
  const plain = source.kind === 'jsonl'
  const stats: FollowStats = { appends: 0, fullImports: 0, bytesRead: 0, appendedBytes: 0, reimports: [] }
  let torn: { line: number; chars: number } | null = null
  const onTorn = (line: number, chars: number): void => {
    torn = { line, chars }
  }
  const sinkFor = (live: boolean): StoreSink =>
    new StoreSink({ store: request.store, file, setTime: request.setTime, dryRun: false, writers, live })
  /** A whole import of any source (every change of a compressed rollout or an events directory; the final one). */
  const runImport = async (live: boolean): Promise<SourceOutcome | null> => {
    torn = null
    try {
      const outcome = await importOne({
        source,
        file,
        from: request.from,
        lenient: request.lenient,
        sink: sinkFor(live),
        progress,
        live,
        onTorn,
      })
      stats.fullImports += 1
      stats.bytesRead += plain ? (await stat(source.path)).size : source.bytes
      return outcome
    } catch (error) {
      if (notYet(error)) return null
      throw error
    }
  }
  /** A whole live import of a plain file, up to its last newline, kept to be appended to. */
  const startLive = async (): Promise<{ outcome: SourceOutcome; tracked: Tracked } | null> => {
    torn = null
    const info = await stat(source.path)
    const end = await completeEnd(source.path, { from: 0, size: info.size })
    if (end < info.size) torn = { line: -1, chars: info.size - end }
    const hash = createHash('sha256')
    let opens = 0
    const sink = sinkFor(true)
    let live: LiveImport
    try {
      live = await importLive(
        () => {
          opens += 1
          const range = { start: 0, end, hashTo: info.size }
          const text = readRange(source.path, range, opens === 1 ? hash : undefined)
          stats.bytesRead += opens === 1 ? info.size : end
          progress.update(end, opens === 1 ? 'scan' : `pass ${opens}`)
          return splitLines(text)
        },
        {
          file,
          sha256: () => hash.digest('hex'),
          from: request.from,
          lenient: request.lenient,
          sourceName: source.sourceName,
          sink,
        },
      )
    } catch (error) {
      if (notYet(error)) return null
      throw error
    }
    stats.fullImports += 1
    const report = live.result.report
    if (torn !== null) torn = { line: report.lines + 1, chars: info.size - end }
    const tailStart = Math.max(0, end - TAIL_BYTES)
    const tail = Buffer.alloc(end - tailStart)
    const handle = await open(source.path, 'r')
    try {
      await handle.read(tail, 0, tail.length, tailStart)
    } finally {
      await handle.close()
    }
    const outcome: SourceOutcome = {
      file,
      format: live.result.format,
      formatVersion: live.result.formatVersion,
      detection: live.result.detection,
      report,
      sessions: [...sink.outcomes],
    }
    const id = live.result.sessions[0]!.id
    return { outcome, tracked: { live, id, ino: info.ino, offset: end, tail, records: report.records } }
  }
  /**
   * Appends what was written since the last poll to the tracked live import: the number of
   * events appended, or the reason it cannot be (then the caller imports again whole).
   */
  const append = async (tracked: Tracked): Promise<{ added: number } | { reason: string }> => {
    let info
    try {
      info = await stat(source.path)
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return { reason: 'the file was removed' }
      throw error
    }
    if (info.ino !== tracked.ino) return { reason: 'the file was replaced' }
    if (info.size < tracked.offset)
      return { reason: `the file shrank from ${tracked.offset} to ${info.size} bytes` }
    if (!(await sameBytes(source.path, tracked.offset - tracked.tail.length, tracked.tail)))
      return { reason: 'the file was rewritten before the end of what was imported' }
    const end = await completeEnd(source.path, { from: tracked.offset, size: info.size })
    torn = end < info.size ? { line: -1, chars: info.size - end } : null
    if (end === tracked.offset) return { added: 0 }
    let text = ''
    for await (const chunk of readRange(source.path, { start: tracked.offset, end })) text += chunk
    stats.bytesRead += end - tracked.offset
    stats.appendedBytes += end - tracked.offset
    const lines = text.split('\n')
    lines.pop()
    const outcome = tracked.live.append(lines)
    if (outcome.kind === 'reimport') return { reason: outcome.reason }
    const writer = writers.get(tracked.id)
    if (writer === undefined) return { reason: `session ${tracked.id} is not open for writing` }
    if (!(await appendEvents(writer, outcome.events, request.setTime)))
      return {
        reason: `session ${tracked.id} holds events the live import does not (closers of an earlier import)`,
      }
    stats.appends += 1
    tracked.offset = end
    tracked.tail = Buffer.from(text.slice(-TAIL_BYTES), 'utf8').subarray(-TAIL_BYTES)
    tracked.records = outcome.report.records
    if (torn !== null) torn = { line: outcome.report.lines + 1, chars: info.size - end }
    return { added: outcome.events.length }
  }
  const appended = (outcome: SourceOutcome): number =>
    outcome.sessions.reduce(
      (sum, session) =>
        sum +
        (session.action === 'appended'
          ? (session.appended ?? 0)
          : session.action === 'created'
            ? session.events
            : 0),
      0,
    )
  const state: { tracked: Tracked | null } = { tracked: null }
  let last: string | null = null
  let total = 0
  let records = -1
  const say = (added: number, how: string): void => {
    total += added
    if (!context.progressEnabled) return
    const waiting = torn
    context.io.stderr(
      `${terminalSafe(`import --follow ${file}: ${records} records, +${added} events (${total} written), ${how}${waiting === null ? '' : `; line ${waiting.line} is still being written`}`)}\n`,
    )
  }
  /** A whole import (the first, or again): live and kept when the file is plain. */
  const whole = async (why: string | null): Promise<void> => {
    if (why !== null) stats.reimports.push(why)
    const how = why === null ? 'imported' : `imported again whole (${why})`
    if (!plain) {
      const outcome = await runImport(true)
      if (outcome !== null && outcome.report.records !== records) {
        records = outcome.report.records
        say(appended(outcome), how)
      }
      return
    }
    const started = await startLive()
    state.tracked = started?.tracked ?? null
    if (started !== null) {
      records = started.outcome.report.records
      say(appended(started.outcome), how)
    }
  }
  try {
    if (context.progressEnabled) {
      context.io.stderr(
        `${terminalSafe(`import --follow ${file}: following; Ctrl-C stops and closes the session`)}\n`,
      )
    }
    while (signal?.aborted !== true) {
      const current = await fingerprint(source.path)
      if (current !== null && current !== last) {
        last = current
        const now = state.tracked
        if (now === null) await whole(null)
        else {
          const result = await append(now)
          if ('reason' in result) await whole(result.reason)
          else if (result.added > 0 || now.records !== records) {
            records = now.records
            say(result.added, `appended from the new bytes`)
          }
        }
      }
      await sleep(request.pollMs, signal)
    }
    // Stopped: one final import closes what the source left open and adds the forks.
    const final = await runImport(false)
    const waiting = torn as { line: number; chars: number } | null
    if (waiting !== null) {
      context.notice(
        'note',
        `${file} line ${waiting.line} (${waiting.chars} characters) was still being written when following stopped; not imported (import the file again once it is complete)`,
      )
    }
    if (final === null) {
      context.notice('note', `${file}: no complete record was written while following; nothing imported`)
      if (request.json)
        await context.out.write(
          `${stringifyJson({ root: request.root, follow: true, sources: [], failures: [] })}\n`,
        )
      return ExitCode.OK
    }
    total += appended(final)
    const imports = stats.fullImports + stats.appends
    if (request.json) {
      await context.out.write(
        `${stringifyJson({ root: request.root, follow: true, imports, appended: total, followed: stats, sources: [final], failures: [] })}\n`,
      )
    } else {
      await context.out.write(
        `${terminalSafe(`${file}: followed through ${imports} import(s) (${stats.fullImports} whole, ${stats.appends} appends of the new bytes; ${stats.bytesRead} bytes read), ${total} events written; stopped`)}\n`,
      )
      for (const session of final.sessions)
        await context.out.write(
          `${terminalSafe(`  ${session.id} (${session.role}): ${session.events} events`)}\n`,
        )
    }
    return ExitCode.OK
  } finally {
    for (const writer of writers.values()) await writer.close()
  }
}
