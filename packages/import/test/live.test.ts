import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { importLive, splitLines } from '../src/index.ts'
import type { ImportBatch } from '../src/index.ts'
import { importText, SYNTHETIC } from './support/import.ts'

/** A live import of `text` through a sink, as `import --follow` starts one. */
async function startLive(text: string) {
  const batches: ImportBatch[] = []
  const live = await importLive(
    () =>
      splitLines(
        (async function* () {
          await Promise.resolve()
          yield text
        })(),
      ),
    {
      file: 'live.jsonl',
      sha256: createHash('sha256').update(text).digest('hex'),
      sourceName: 'x',
      batchEvents: 4,
      sink: { write: (batch) => Promise.resolve(void batches.push(batch)) },
    },
  )
  return { live, events: batches.flatMap((batch) => batch.events) }
}

function lineFixtures(): string[] {
  return ['claude-code', 'codex', 'pi', 'openhands'].flatMap((dir) =>
    readdirSync(join(SYNTHETIC, dir))
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => join(SYNTHETIC, dir, name)),
  )
}

describe('importLive (a followed source goes on without being read again)', () => {
  it('appended lines give exactly the events of a live import of the grown source, or ask for a re-import', async () => {
    let appended = 0
    let reimports = 0
    for (const file of lineFixtures()) {
      const lines = readFileSync(file, 'utf8').split('\n')
      if (lines.at(-1) === '') lines.pop()
      for (let cut = 2; cut < lines.length; cut += 3) {
        const { live, events } = await startLive(`${lines.slice(0, cut).join('\n')}\n`)
        const built: LoggedEvent[] = [...events]
        let at = cut
        let outcome: ReturnType<typeof live.append> | undefined
        // The rest arrives a few lines at a time.
        while (at < lines.length) {
          const step = lines.slice(at, at + 2)
          at += step.length
          outcome = live.append(step)
          if (outcome.kind === 'reimport') break
          built.push(...outcome.events)
        }
        if (outcome?.kind === 'reimport') {
          reimports += 1
          expect(outcome.reason, file).not.toBe('')
          expect(live.append(['{}'])).toEqual(outcome)
          continue
        }
        appended += 1
        const grown = `${lines.slice(0, at).join('\n')}\n`
        const oneShot = await importText(grown, { live: true, sourceName: 'x' })
        expect(JSON.stringify(built), `${file} cut ${cut}`).toBe(JSON.stringify(oneShot.sessions[0]!.events))
        if (outcome?.kind === 'appended') {
          expect(outcome.report.records).toBe(oneShot.report.records)
          expect(outcome.report.events).toBe(oneShot.report.events)
          expect(outcome.report.lossy).toEqual(oneShot.report.lossy)
        }
      }
    }
    expect(appended).toBeGreaterThan(12)
    expect(reimports).toBeGreaterThan(0)
  })

  it('a Claude Code record that does not extend the main leaf, a bad line, or a pi source asks for a re-import', async () => {
    const branches = readFileSync(join(SYNTHETIC, 'claude-code', 'branches.jsonl'), 'utf8').split('\n')
    // Lines 1-4: b1 <- b2 <- b3; line 5 (b4 under b3) extends the leaf, line 6 (b5 under b2) does not.
    const { live } = await startLive(`${branches.slice(0, 4).join('\n')}\n`)
    const extended = live.append([branches[4]!])
    expect(extended.kind).toBe('appended')
    expect(live.append([branches[5]!])).toEqual({
      kind: 'reimport',
      reason: expect.stringMatching(/line 6: record b5 hangs under b2, not under the main path's leaf b4/),
    })
    const bad = await startLive(`${branches.slice(0, 4).join('\n')}\n`)
    expect(bad.live.append(['{"type": '])).toEqual({
      kind: 'reimport',
      reason: 'line 5 is not a JSON object',
    })
    const pi = readFileSync(join(SYNTHETIC, 'pi', 'v3-tree.jsonl'), 'utf8').split('\n')
    const piLive = await startLive(`${pi.slice(0, 3).join('\n')}\n`)
    expect(piLive.live.append([pi[3]!])).toMatchObject({
      kind: 'reimport',
      reason: 'the pi mapping of this source needs the whole file',
    })
  })
})
