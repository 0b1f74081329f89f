import { expect } from 'vitest'

import type { PostgresBackend } from '../../src/index.ts'
import { startWorker } from './children.ts'
import { createRequest, sessionId, storedRows } from './pg.ts'

/**
 * Two worker processes race `rounds` times each for one session (acquire without takeover,
 * append 2 lines, release). Checks: every grant has its own epoch, each epoch's rows are
 * exactly its 2 lines at the seq the worker reported, seq is dense, no worker failed.
 */
export async function raceRounds(
  backend: PostgresBackend,
  url: string,
  rounds: number,
): Promise<{ wins: number; locked: number }> {
  const id = sessionId('race')
  await backend.create(createRequest(id))
  const workers = ['racer-a', 'racer-b'].map((owner) => startWorker([url, id, owner, 'race', String(rounds)]))
  const exits = await Promise.all(workers.map((worker) => worker.exited))
  for (const exit of exits) expect(exit, exit.stderr).toMatchObject({ code: 0 })
  const wins = workers.flatMap((worker) => worker.lines.filter((line) => line.startsWith('won ')))
  const locked = workers.flatMap((worker) => worker.lines.filter((line) => line.startsWith('locked ')))
  const rows = await storedRows(url, id)
  expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index))
  expect(rows.length).toBe(wins.length * 2)
  const epochs = new Set<number>()
  for (const win of wins) {
    const [, , epochText, seqText] = win.split(' ')
    const epoch = Number(epochText)
    const seq = Number(seqText)
    expect(epochs.has(epoch)).toBe(false)
    epochs.add(epoch)
    expect(rows.slice(seq, seq + 2).map((row) => row.epoch)).toEqual([epoch, epoch])
  }
  return { wins: wins.length, locked: locked.length }
}
