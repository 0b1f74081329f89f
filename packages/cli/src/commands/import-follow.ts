import { stat } from 'node:fs/promises'

import { ImportError, ImportErrorCode } from '@agent-ledger/import'
import type { SourceFormat } from '@agent-ledger/import'

import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { terminalSafe } from '../terminal-text.ts'
import type { ImportSourceFile } from './import-sources.ts'
import { importOne, StoreSink } from './import-write.ts'
import type { SourceOutcome } from './import-write.ts'
import type { ImportStore, ImportWriter } from './import-write.ts'

/** What `import --follow` needs. */
export interface FollowRequest {
  readonly source: ImportSourceFile
  readonly file: string
  readonly from: SourceFormat | 'auto'
  readonly lenient: boolean
  readonly store: ImportStore
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

/**
 * `import --follow`: imports a source an agent is still writing, again each time it changes,
 * until the signal aborts (SIGINT). While following, each import is live: it hands over only
 * what the complete lines settle (no repair closers, no message still being merged, no forks),
 * and the session's writer stays open, so the session grows by exactly the events a one-shot
 * import of the grown source would have there. A last line still being written is waited for.
 * On abort, one final import closes what the source left open (placeholders, the open turn)
 * and adds the forks: the session then equals a one-shot import of the source as it stands.
 */
export async function followSource(context: CommandContext, request: FollowRequest): Promise<number> {
  const { source, file } = request
  const signal = context.io.signal
  const writers = new Map<string, ImportWriter>()
  const progress = new Progress(context.io, {
    label: `import --follow ${file}`,
    unit: 'bytes',
    total: null,
    enabled: context.progressEnabled,
  })
  let torn: { line: number; chars: number } | null = null
  const onTorn = (line: number, chars: number): void => {
    torn = { line, chars }
  }
  let imports = 0
  const runImport = async (live: boolean): Promise<SourceOutcome | null> => {
    torn = null
    const sink = new StoreSink({
      store: request.store,
      file,
      setTime: request.setTime,
      dryRun: false,
      writers,
      live,
    })
    try {
      const outcome = await importOne({
        source,
        file,
        from: request.from,
        lenient: request.lenient,
        sink,
        progress,
        live,
        onTorn,
      })
      imports += 1
      return outcome
    } catch (error) {
      if (notYet(error)) return null
      throw error
    }
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
  let last: string | null = null
  let total = 0
  let records = -1
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
        const outcome = await runImport(true)
        if (outcome !== null && outcome.report.records !== records) {
          records = outcome.report.records
          const added = appended(outcome)
          total += added
          if (context.progressEnabled) {
            const waiting = torn as { line: number; chars: number } | null
            context.io.stderr(
              `${terminalSafe(`import --follow ${file}: ${records} records, +${added} events (${total} written)${waiting === null ? '' : `; line ${waiting.line} is still being written`}`)}\n`,
            )
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
    if (request.json) {
      await context.out.write(
        `${stringifyJson({ root: request.root, follow: true, imports, appended: total, sources: [final], failures: [] })}\n`,
      )
    } else {
      await context.out.write(
        `${terminalSafe(`${file}: followed through ${imports} import(s), ${total} events written; stopped`)}\n`,
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
