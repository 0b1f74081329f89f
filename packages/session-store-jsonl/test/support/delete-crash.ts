/**
 * The shared part of the delete crash tests (RELIABILITY D1, D2): a seeded root, a child that
 * deletes or prunes and is SIGKILLed, and the check that every session is whole (listed,
 * verifies `ok` with all its events, opens for write and takes an append) or gone (not listed,
 * `SESSION_NOT_FOUND`), never half; then a second delete or prune leaves no tombstone.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import { afterAll, expect } from 'vitest'

import { createJsonlStore } from '../../src/index.ts'
import { TOMBSTONE_PREFIX } from '../../src/backend/delete.ts'
import { spawnBundledChild } from './children.ts'

const scratch = mkdtempSync(join(tmpdir(), 'al-delete-kill-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let counter = 0

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

/** A root with `a` (plain, 5 events), `a-fork` (forked from `a` at seq 2), `b` (zstd, 4 events). */
async function seededRoot(): Promise<{ root: string; events: Map<string, number> }> {
  counter += 1
  const root = join(scratch, `root${counter}`)
  mkdirSync(root, { mode: 0o700 })
  const events = new Map<string, number>()
  for (const [id, count, encoding] of [
    ['a', 5, 'plain'],
    ['b', 4, 'zstd'],
  ] as const) {
    const store = createJsonlStore({ root, encoding, owner: 'test-seeder' })
    const writer = await store.create({ id, header: { cwd: '/kill' } })
    for (let index = 0; index < count; index += 1) writer.append(user(`${id} ${index}`))
    await writer.close()
    if (id === 'a') {
      await (await store.fork('a', { to: 'a-fork', atSeq: 2 })).close()
      events.set('a-fork', await countEvents(store, 'a-fork'))
    }
    events.set(id, count)
    await store.close()
  }
  return { root, events }
}

async function countEvents(store: ReturnType<typeof createJsonlStore>, id: string): Promise<number> {
  let count = 0
  for await (const _event of store.readEvents(id)) count += 1
  return count
}

interface RoundCheck {
  readonly gone: string[]
  /** Sessions neither whole nor gone, with why. */
  readonly half: string[]
}

/** Classifies every seeded session as whole (and resumable) or gone. */
async function check(root: string, events: Map<string, number>): Promise<RoundCheck> {
  const store = createJsonlStore({ root, owner: 'test-checker' })
  const gone: string[] = []
  const half: string[] = []
  try {
    const listing = await store.list({ limit: 1000 })
    if (listing.problems.length > 0) half.push(`problems: ${listing.problems.map((p) => p.id).join(', ')}`)
    const listed = new Set(listing.sessions.map((session) => session.id))
    for (const [id, count] of events) {
      const opened = await store.openReader(id).then(
        () => true,
        (error: unknown) => {
          if (SessionStoreError.is(error, SessionStoreErrorCode.SESSION_NOT_FOUND)) return false
          throw error
        },
      )
      if (!opened) {
        if (listed.has(id)) half.push(`${id}: listed but not found`)
        else gone.push(id)
        continue
      }
      if (!listed.has(id)) half.push(`${id}: opens but is not listed`)
      const report = await store.verify(id)
      if (report.status !== 'ok' || report.events !== count) {
        half.push(`${id}: verify ${report.status} with ${report.events} of ${count} events`)
        continue
      }
      const writer = await store.openWriter(id)
      writer.append(user('resumed'))
      await writer.close()
      if ((await countEvents(store, id)) !== count + 1) half.push(`${id}: the resumed append is missing`)
    }
  } finally {
    await store.close()
  }
  return { gone, half }
}

function tombstones(root: string): string[] {
  return readdirSync(root).filter((name) => name.startsWith(TOMBSTONE_PREFIX))
}

/** Kills the child before op 1, 2, ... until a run completes; checks every round. */
export async function killAtEveryOp(
  command: Record<string, unknown>,
  options: { readonly mustSurvive: readonly string[]; readonly finish: Record<string, unknown> },
): Promise<{ kills: number; goneCounts: number[]; half: string[] }> {
  const half: string[] = []
  const goneCounts: number[] = []
  for (let killAtOp = 1; killAtOp <= 400; killAtOp += 1) {
    const { root, events } = await seededRoot()
    const child = await spawnBundledChild('delete-child.ts', [JSON.stringify({ root, ...command, killAtOp })])
    const exit = await child.exited
    const killed = exit.signal === 'SIGKILL'
    if (!killed) {
      expect(exit.code, child.stderr()).toBe(0)
      expect(child.lines.some((line) => line.includes('"event":"done"'))).toBe(true)
    }
    const round = await check(root, events)
    half.push(...round.half.map((problem) => `op ${killAtOp}: ${problem}`))
    for (const id of options.mustSurvive) {
      if (round.gone.includes(id)) half.push(`op ${killAtOp}: ${id} was deleted but must survive`)
    }
    goneCounts.push(round.gone.length)
    // The next delete or prune finishes what the killed one left: no tombstone, same verdicts.
    const child2 = await spawnBundledChild('delete-child.ts', [JSON.stringify({ root, ...options.finish })])
    expect((await child2.exited).code, child2.stderr()).toBe(0)
    expect(tombstones(root)).toEqual([])
    if (!killed) return { kills: killAtOp - 1, goneCounts, half }
  }
  throw new Error('the child was still killed at op 400: the loop bound is too small')
}

/**
 * Kills the child at each named step of the delete (its hook points; for a prune,
 * `<n>:<step>` of its n-th delete); checks every round. `gone`: the sessions gone after each kill.
 */
export async function killAtEachPoint(
  command: { readonly cmd: 'delete'; readonly id: string } | { readonly cmd: 'prune'; readonly keep: number },
  points: readonly string[],
  mustSurvive: readonly string[],
): Promise<{ gone: Map<string, string[]>; half: string[] }> {
  const half: string[] = []
  const gone = new Map<string, string[]>()
  for (const crashAt of points) {
    const { root, events } = await seededRoot()
    const child = await spawnBundledChild('delete-child.ts', [JSON.stringify({ root, ...command, crashAt })])
    const exit = await child.exited
    if (exit.signal !== 'SIGKILL') half.push(`${crashAt}: the child was not killed (${child.stderr()})`)
    const round = await check(root, events)
    half.push(...round.half.map((problem) => `${crashAt}: ${problem}`))
    for (const survivor of mustSurvive) {
      if (round.gone.includes(survivor)) half.push(`${crashAt}: ${survivor} was deleted but must survive`)
    }
    gone.set(crashAt, round.gone.sort())
    // The same delete or prune again finishes what the killed one left: no tombstone.
    const again = await spawnBundledChild('delete-child.ts', [JSON.stringify({ root, ...command })])
    expect((await again.exited).code, again.stderr()).toBe(0)
    expect(tombstones(root)).toEqual([])
  }
  return { gone, half }
}
