import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { createIncrement, importSource, planIncrement, splitLines } from '../src/index.ts'
import type { ImportBatch, ImportOptions, ImportResult, SourceLine } from '../src/index.ts'
import { importText, replay, SHARED_FIXTURES, sharedFixturesAvailable, SYNTHETIC } from './support/import.ts'

function fixtures(): string[] {
  const files = ['claude-code', 'codex', 'pi', 'openhands'].flatMap((dir) =>
    readdirSync(join(SYNTHETIC, dir)).map((name) => join(SYNTHETIC, dir, name)),
  )
  if (sharedFixturesAvailable()) {
    for (const dir of ['claude-code', 'codex', 'openhands'])
      for (const name of readdirSync(join(SHARED_FIXTURES, dir))) files.push(join(SHARED_FIXTURES, dir, name))
  }
  return files
}

/** Counts how often the source is opened, so a test can tell a re-read source from a held one. */
function reader(text: string): { open: () => AsyncIterable<SourceLine>; opened: () => number } {
  let opened = 0
  return {
    open: () => {
      opened += 1
      return splitLines(
        (async function* () {
          await Promise.resolve()
          for (let index = 0; index < text.length; index += 211) yield text.slice(index, index + 211)
        })(),
      )
    },
    opened: () => opened,
  }
}

async function importStreamed(
  text: string,
  options: Partial<ImportOptions> = {},
): Promise<{ result: ImportResult; batches: ImportBatch[]; opened: number }> {
  const batches: ImportBatch[] = []
  const source = reader(text)
  const result = await importSource(source.open, {
    file: 'source.jsonl',
    sha256: createHash('sha256').update(text).digest('hex'),
    batchEvents: 3,
    sink: {
      write: (batch) => {
        batches.push(batch)
        return Promise.resolve()
      },
    },
    ...options,
  })
  return { result, batches, opened: source.opened() }
}

function joined(batches: readonly ImportBatch[], id: string): LoggedEvent[] {
  return batches.filter((batch) => batch.id === id).flatMap((batch) => batch.events)
}

describe('streamed import (a re-read source, events handed to a sink in batches)', () => {
  it('gives every fixture the same sessions, headers, events and report as an import held in memory', async () => {
    const files = fixtures()
    expect(files.length).toBeGreaterThanOrEqual(8)
    for (const file of files) {
      const text = readFileSync(file, 'utf8')
      const held = await importText(text, { sourceName: 'x' })
      const { result, batches } = await importStreamed(text, { sourceName: 'x' })
      expect(result.report, file).toEqual(held.report)
      expect(result.sessions.map((session) => session.id)).toEqual(held.sessions.map((session) => session.id))
      for (const session of held.sessions) {
        const mine = batches.filter((batch) => batch.id === session.id)
        expect(mine[0]?.first, file).toBe(true)
        expect(mine.at(-1)?.last, file).toBe(true)
        expect(mine.filter((batch) => batch.first)).toHaveLength(1)
        expect(mine.every((batch) => JSON.stringify(batch.header) === JSON.stringify(session.header))).toBe(
          true,
        )
        expect(JSON.stringify(joined(batches, session.id)), `${file} ${session.id}`).toBe(
          JSON.stringify(session.events),
        )
        const streamed = result.sessions.find((other) => other.id === session.id)!
        expect(streamed.events).toEqual([])
        expect(streamed.eventCount).toBe(session.events.length)
      }
    }
  })

  it('hands a long main session over in batches while it is built, and reads a tree source twice instead of holding it', async () => {
    const text = readFileSync(join(SYNTHETIC, 'claude-code', 'branches.jsonl'), 'utf8')
    const { batches, opened } = await importStreamed(text)
    const main = batches.filter((batch) => batch.role === 'main')
    expect(main.length).toBeGreaterThanOrEqual(4)
    // A batch goes once it holds 3 events (a record may add several: a merged response and its results).
    expect(main.slice(0, -1).every((batch) => batch.events.length >= 3)).toBe(true)
    // Pass 1, the main path, two per fork (1: a probe for the shared prefix, then the build), the
    // sidechain: every pass re-reads the source.
    expect(opened).toBe(5)
    // Sessions come one after the other: a session's last batch before the next one's first.
    const order = batches.map((batch) => batch.id).filter((id, at, all) => at === 0 || all[at - 1] !== id)
    expect(new Set(order).size).toBe(order.length)
    expect(batches.filter((batch) => batch.first).map((batch) => batch.role)).toEqual([
      'main',
      'fork',
      'sidechain',
    ])
    // A fork comes in batches too, after the session it branches from is complete: never whole.
    const fork = batches.filter((batch) => batch.role === 'fork')
    expect(batches.findIndex((batch) => batch.role === 'fork')).toBeGreaterThan(
      batches.findIndex((batch) => batch.role === 'main' && batch.last),
    )
    expect(fork.length).toBeGreaterThanOrEqual(4)
    expect(fork.map((batch) => [batch.first, batch.last])).toEqual(
      fork.map((_, at) => [at === 0, at === fork.length - 1]),
    )
    // Its inherited prefix, re-derived from the source, then session/end-seed, then its own events.
    const events = fork.flatMap((batch) => batch.events)
    const seed = events.findIndex((event) => event.type === 'session/end-seed')
    expect(seed).toBeGreaterThan(3)
    expect(fork[0]!.header).toMatchObject({ seeded: true, inheritedEventCount: seed })
    expect(events.map((event) => event.seq)).toEqual(events.map((_, at) => at))
    expect(JSON.stringify(events.slice(0, seed))).toBe(
      JSON.stringify(joined(batches, main[0]!.id).slice(0, seed)),
    )
  })

  it('gives forks the same log with and without a sink, whatever the batch size', async () => {
    const tree = ['claude-code', 'pi'].flatMap((dir) =>
      readdirSync(join(SYNTHETIC, dir)).map((name) => join(SYNTHETIC, dir, name)),
    )
    if (sharedFixturesAvailable())
      for (const name of readdirSync(join(SHARED_FIXTURES, 'claude-code')))
        tree.push(join(SHARED_FIXTURES, 'claude-code', name))
    let forks = 0
    for (const file of tree) {
      const text = readFileSync(file, 'utf8')
      const held = await importText(text, { sourceName: 'x' })
      for (const batchEvents of [1, 2, 5, 64, 4096]) {
        const { result, batches } = await importStreamed(text, { sourceName: 'x', batchEvents })
        expect(result.report, `${file} ${batchEvents}`).toEqual(held.report)
        for (const session of held.sessions) {
          if (session.role !== 'fork') continue
          forks += 1
          const mine = batches.filter((batch) => batch.id === session.id)
          expect(mine.every((batch) => batch.events.length <= batchEvents + 16)).toBe(true)
          expect(JSON.stringify(mine[0]!.header)).toBe(JSON.stringify(session.header))
          expect(JSON.stringify(joined(batches, session.id)), `${file} ${session.id} ${batchEvents}`).toBe(
            JSON.stringify(session.events),
          )
        }
      }
    }
    expect(forks).toBeGreaterThanOrEqual(10)
  })

  it('refuses a malformed line in the first pass, before any batch is handed over', async () => {
    const lines = readFileSync(join(SYNTHETIC, 'codex', 'compacted.jsonl'), 'utf8').split('\n')
    lines[15] = '{"timestamp": broken'
    const batches: ImportBatch[] = []
    await expect(
      importSource(reader(lines.join('\n')).open, {
        file: 'r.jsonl',
        sha256: '0'.repeat(64),
        batchEvents: 1,
        sink: { write: (batch) => Promise.resolve(void batches.push(batch)) },
      }),
    ).rejects.toMatchObject({ code: 'MALFORMED_LINE', line: 16 })
    expect(batches).toEqual([])
  })

  it('live mode builds a prefix of the complete import: no closers, no message still being merged, no forks', async () => {
    const text = readFileSync(join(SYNTHETIC, 'claude-code', 'branches.jsonl'), 'utf8')
    const full = await importText(text)
    const lines = text.split('\n')
    let prefixes = 0
    for (let cut = 1; cut < lines.length; cut += 1) {
      const partial = `${lines.slice(0, cut).join('\n')}\n`
      const live = await importText(partial, { live: true })
      expect(live.sessions).toHaveLength(1)
      const events = live.sessions[0]!.events
      const prefix = full.sessions[0]!.events.slice(0, events.length)
      // A cut may move the last leaf to another branch (then it is not a prefix: DIVERGED later).
      if (JSON.stringify(events) !== JSON.stringify(prefix)) continue
      prefixes += 1
      expect(events.some((event) => (event.data as { code?: string }).code === 'TOOL_OUTCOME_UNKNOWN')).toBe(
        false,
      )
    }
    expect(prefixes).toBeGreaterThan(lines.length / 2)
    const whole = await importText(text, { live: true })
    expect(JSON.stringify(whole.sessions[0]!.events)).toBe(
      JSON.stringify(full.sessions[0]!.events.slice(0, whole.sessions[0]!.events.length)),
    )
    expect(whole.sessions[0]!.events.length).toBeLessThan(full.sessions[0]!.events.length)
  })
})

async function* stream(events: readonly LoggedEvent[]): AsyncGenerator<LoggedEvent> {
  await Promise.resolve()
  yield* events
}

async function streamedPlan(
  stored: readonly LoggedEvent[],
  fresh: readonly LoggedEvent[],
  batch: number,
): Promise<{ outcome: unknown; events: LoggedEvent[] }> {
  const increment = createIncrement(stream(stored), { file: 'r.jsonl' })
  const events: LoggedEvent[] = []
  for (let index = 0; index < fresh.length; index += batch)
    events.push(...(await increment.push(fresh.slice(index, index + batch))))
  return { outcome: await increment.end(), events }
}

describe('createIncrement (the streamed planIncrement)', () => {
  it('appends what planIncrement appends, for every cut of a grown source and any batch size', async () => {
    const text = readFileSync(join(SYNTHETIC, 'codex', 'compacted.jsonl'), 'utf8')
    const lines = text.split('\n')
    const full = (await importText(text)).sessions[0]!.events
    let appended = 0
    for (let cut = 2; cut < lines.length; cut += 1) {
      const stored = (await importText(`${lines.slice(0, cut).join('\n')}\n`)).sessions[0]!.events
      let planned: ReturnType<typeof planIncrement> | Error
      try {
        planned = planIncrement(stored, full, { file: 'r.jsonl' })
      } catch (error) {
        planned = error as Error
      }
      for (const batch of [1, 4, 1000]) {
        if (planned instanceof Error) {
          await expect(streamedPlan(stored, full, batch)).rejects.toMatchObject({ code: 'DIVERGED' })
          continue
        }
        const { outcome, events } = await streamedPlan(stored, full, batch)
        if (planned.kind === 'unchanged') {
          expect(outcome).toEqual({ kind: 'unchanged' })
          continue
        }
        appended += 1
        expect(outcome).toEqual({
          kind: 'append',
          appended: planned.events.length,
          closersKept: planned.closersKept,
        })
        expect(JSON.stringify(events)).toBe(JSON.stringify(planned.events))
        replay([...stored, ...events])
      }
    }
    expect(appended).toBeGreaterThan(6)
  })

  it('ends the stored read when a push diverges, and on close when given up before its end', async () => {
    const text = readFileSync(join(SYNTHETIC, 'codex', 'compacted.jsonl'), 'utf8')
    const stored = (await importText(text)).sessions[0]!.events
    const rewritten = (await importText(text.replace('run the tests', 'run the linter'))).sessions[0]!.events
    /** The stored events as a store's read yields them; `ended` once its finally ran. */
    const tracked = (): { read: AsyncGenerator<LoggedEvent>; ended: () => boolean } => {
      let ended = false
      async function* read(): AsyncGenerator<LoggedEvent> {
        try {
          yield* stream(stored)
        } finally {
          ended = true
        }
      }
      return { read: read(), ended: () => ended }
    }
    const diverging = tracked()
    const increment = createIncrement(diverging.read, { file: 'r.jsonl' })
    await expect(increment.push(rewritten)).rejects.toMatchObject({ code: 'DIVERGED' })
    expect(diverging.ended()).toBe(true)

    const abandoned = tracked()
    const givenUp = createIncrement(abandoned.read, { file: 'r.jsonl' })
    expect(await givenUp.push(stored.slice(0, 3))).toEqual([])
    expect(abandoned.ended()).toBe(false)
    await givenUp.close()
    await givenUp.close()
    expect(abandoned.ended()).toBe(true)
  })

  it('the same source changes nothing; a rewritten one diverges', async () => {
    const text = readFileSync(join(SYNTHETIC, 'codex', 'compacted.jsonl'), 'utf8')
    const stored = (await importText(text)).sessions[0]!.events
    expect((await streamedPlan(stored, stored, 5)).outcome).toEqual({ kind: 'unchanged' })
    const rewritten = (await importText(text.replace('run the tests', 'run the linter'))).sessions[0]!.events
    await expect(streamedPlan(stored, rewritten, 5)).rejects.toMatchObject({ code: 'DIVERGED' })
  })
})
