import { existsSync, lstatSync, readdirSync, utimesSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LOG_FILE_NAME, ZSTD_LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'
import type { SessionWriter } from '@agent-ledger/session-store'

import { cli, makeRoot, testStore, writeSession } from './support/sessions.ts'

const DAY = 86_400_000
const wallClock = (): string => new Date().toISOString()

let root: string
let cleanup: () => void
let held: SessionWriter | undefined

/** Moves a session's log modification time `days` back (its last update, as a listing sees it). */
function age(id: string, days: number): void {
  const when = new Date(Date.now() - days * DAY)
  utimesSync(join(root, id, LOG_FILE_NAME), when, when)
}

function bytesOf(id: string): number {
  return readdirSync(join(root, id)).reduce((sum, name) => sum + lstatSync(join(root, id, name)).size, 0)
}

beforeEach(async () => {
  ;({ root, cleanup } = makeRoot())
  const store = testStore(root)
  for (const id of ['old1', 'old2', 'new1', 'live']) await writeSession(store, id, { turns: 1 })
  await (await store.fork('old1', { to: 'old1-fork', atSeq: 2 })).close()
  // A live writer on an old session: prune must never delete it.
  held = await store.openWriter('live')
  age('old1', 120)
  age('old2', 95)
  age('live', 200)
  age('new1', 3)
})
afterEach(async () => {
  await held?.close()
  cleanup()
})

describe('prune', () => {
  it('--dry-run prints the sessions it would delete and the bytes, keeps the live one, deletes nothing', async () => {
    const before = bytesOf('old1') + bytesOf('old2')
    const run = await cli(['prune', root, '--older-than', '90d', '--dry-run'], { clock: wallClock })
    expect(run.code).toBe(0)
    const lines = run.stdout.split('\n')
    expect(lines[0]).toMatch(
      /^prune: the policy retires 3 sessions of .* \(measuring each unless a live writer holds it\):$/,
    )
    expect(lines.slice(1, 4).map((line) => line.trim().split(/\s+/)[0])).toEqual(['old2', 'old1', 'live'])
    expect(run.stdout).toMatch(/^kept live \(live-lease\): .*cli-test-writer/m)
    expect(run.stdout).toMatch(
      /prune: would delete 2 sessions of 5, would free .*; kept 1 session with a live lease\n$/,
    )
    for (const id of ['old1', 'old2', 'live', 'new1', 'old1-fork'])
      expect(existsSync(join(root, id))).toBe(true)
    const json = JSON.parse(
      (await cli(['prune', root, '--older-than', '90d', '--dry-run', '--json'], { clock: wallClock })).stdout,
    ) as {
      bytesFreed: number
    }
    expect(json.bytesFreed).toBe(before)
  })

  it('deletes the old sessions whole (printing them first), frees their bytes, keeps the live, recent and forked ones readable', async () => {
    const before = { old1: bytesOf('old1'), old2: bytesOf('old2') }
    const text = await cli(['prune', root, '--older-than', '100d', '--keep', '1'], { clock: wallClock })
    expect(text.code).toBe(0)
    // The plan comes before the first "deleted" line.
    expect(text.stdout.indexOf('prune: the policy retires 2 sessions')).toBe(0)
    expect(text.stdout.indexOf('  old1  last updated')).toBeLessThan(text.stdout.indexOf('deleted old1'))
    expect(text.stdout).toMatch(/^deleted old1 \(/m)
    expect(existsSync(join(root, 'old1'))).toBe(false)
    const run = await cli(['prune', root, '--older-than', '90d', '--json'], { clock: wallClock })
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as {
      deleted: { id: string; bytes: number }[]
      skipped: { id: string; reason: string; holder?: string }[]
      bytesFreed: number
      dryRun: boolean
    }
    expect(report.dryRun).toBe(false)
    expect(report.deleted).toEqual([{ id: 'old2', updatedAt: expect.any(String), bytes: before.old2 }])
    expect(report.bytesFreed).toBe(before.old2)
    expect(report.skipped).toEqual([
      expect.objectContaining({ id: 'live', reason: 'live-lease', holder: 'cli-test-writer' }),
    ])
    expect(readdirSync(root).sort()).toEqual(['live', 'new1', 'old1-fork'])
    for (const id of ['new1', 'old1-fork']) {
      const verify = await cli(['verify', join(root, id), '--json'])
      expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
    }
  })

  it('--compress-idle compresses the kept idle sessions (dry run first: nothing changed), keeps their age, deletes the old ones', async () => {
    const events = async (id: string): Promise<number> =>
      (JSON.parse((await cli(['verify', join(root, id), '--json'])).stdout) as { events: number }).events
    const before = await events('old2')
    // --older-than 100d retires old1 (120 days) and live (200 days, a live lease); of the kept
    // ones, old2 (95 days) is idle for more than 30 days, new1 (3 days) and old1-fork (now) are not.
    const dry = await cli(['prune', root, '--older-than', '100d', '--compress-idle', '30d', '--dry-run'], {
      clock: wallClock,
    })
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(
      /^prune: 1 kept session idle for more than 30d, to compress .*:\n {2}old2 {2}last updated/m,
    )
    expect(dry.stdout).toMatch(/^would compress old2$/m)
    expect(dry.stdout).toMatch(/would free .*; would compress 1 idle session/)
    expect(readdirSync(join(root, 'old2'))).toContain(LOG_FILE_NAME)
    expect(existsSync(join(root, 'old1'))).toBe(true)
    const mtime = lstatSync(join(root, 'old2', LOG_FILE_NAME)).mtimeMs

    const run = await cli(['prune', root, '--older-than', '100d', '--compress-idle', '30d', '--json'], {
      clock: wallClock,
    })
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as { deleted: { id: string }[]; compressed: unknown[] }
    expect(report.deleted.map((session) => session.id)).toEqual(['old1'])
    expect(report.compressed).toEqual([{ id: 'old2', updatedAt: expect.any(String), changed: true }])
    const files = readdirSync(join(root, 'old2'))
    expect(files).toContain(ZSTD_LOG_FILE_NAME)
    expect(files).not.toContain(LOG_FILE_NAME)
    // The same lines, the same last update: its age is unchanged, so it stays idle.
    // (the same second of the same day: utimes takes seconds as a float), never reset to now.
    const kept = lstatSync(join(root, 'old2', ZSTD_LOG_FILE_NAME)).mtimeMs
    expect(new Date(kept).toISOString().slice(0, 19)).toBe(new Date(mtime).toISOString().slice(0, 19))
    expect(Date.now() - kept).toBeGreaterThan(94 * 24 * 3600 * 1000)
    expect(await events('old2')).toBe(before)
    expect(readdirSync(join(root, 'new1'))).toContain(LOG_FILE_NAME)
    // Again: old2 is compressed already; nothing changes.
    const again = await cli(['prune', root, '--compress-idle', '30d'], { clock: wallClock })
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^already compressed old2$/m)
    expect(again.stdout).toMatch(/deleted 0 sessions of 4, freed .*; compressed 0 idle sessions/)
  })

  it('refuses a call without --older-than or --keep, and a bad duration, with exit 2 and nothing deleted', async () => {
    const none = await cli(['prune', root])
    expect(none.code).toBe(2)
    expect(none.stderr).toMatch(
      /prune: expected --older-than <duration>, --keep <N>, --compress-idle <duration> or a mix, found none/,
    )
    const bad = await cli(['prune', root, '--older-than', '90x'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--older-than expects a duration such as 90d .*found "90x"/)
    const keep = await cli(['prune', root, '--keep', '-1'])
    expect(keep.code).toBe(2)
    expect(readdirSync(root).sort()).toEqual(['live', 'new1', 'old1', 'old1-fork', 'old2'])
  })
})
