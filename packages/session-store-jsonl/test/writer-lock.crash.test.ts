import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { WRITER_LOCK_FILE_NAME } from '../src/writer-lock.ts'
import { spawnBundledChild } from './support/children.ts'
import type { Child } from './support/children.ts'
import { recordCrashSection } from './support/crash-summary.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-lock-crash-'))
const ROUNDS = Number(process.env['W4_ROUNDS'] ?? '100')
const children: Child[] = []

afterAll(async () => {
  for (const child of children) {
    child.process.kill('SIGKILL')
    await child.exited
  }
  rmSync(scratch, { recursive: true, force: true })
})

async function command(child: Child, value: Record<string, unknown>): Promise<Record<string, unknown>> {
  const from = child.lines.length
  child.send(JSON.stringify(value))
  return JSON.parse(await child.waitForLine(() => true, { from })) as Record<string, unknown>
}

describe('W4(d) crash suite: two processes break the same stale lock at once', () => {
  it(`W4(d): exactly one of two processes acquires a stale lock, ${ROUNDS} rounds`, async () => {
    const contenders = await Promise.all([0, 1].map(() => spawnBundledChild('lock-holder.ts')))
    children.push(...contenders)
    for (const child of contenders) await child.waitForLine((line) => line.includes('"ready"'))
    const dead = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
        .stdout,
    )
    let exactlyOne = 0
    let lockedRejections = 0
    const failures: string[] = []
    for (let round = 0; round < ROUNDS; round += 1) {
      const directory = join(scratch, `s${round}`)
      mkdirSync(directory, { mode: 0o700 })
      const now = new Date().toISOString()
      const stale = {
        pid: dead,
        host: hostname(),
        processStart: null,
        bootId: null,
        nonce: 'ab'.repeat(16),
        acquiredAt: now,
        heartbeatAt: now,
      }
      writeFileSync(join(directory, WRITER_LOCK_FILE_NAME), JSON.stringify(stale))
      const results = await Promise.all(
        contenders.map((child) => command(child, { cmd: 'acquire', dir: directory })),
      )
      const winners = results.filter((result) => result['event'] === 'acquired')
      lockedRejections += results.filter((result) => result['code'] === 'SESSION_LOCKED').length
      const onDisk = (
        JSON.parse(readFileSync(join(directory, WRITER_LOCK_FILE_NAME), 'utf8')) as { nonce: string }
      ).nonce
      if (winners.length === 1 && onDisk === winners[0]!['nonce']) exactlyOne += 1
      else failures.push(`round ${round}: ${JSON.stringify(results)} on disk ${onDisk}`)
      for (const [index, result] of results.entries()) {
        if (result['event'] === 'acquired') {
          const held = await command(contenders[index]!, { cmd: 'assert' })
          if (held['event'] !== 'held')
            failures.push(`round ${round}: winner lost its lock: ${JSON.stringify(held)}`)
          await command(contenders[index]!, { cmd: 'release' })
        }
      }
    }
    await recordCrashSection('W4', {
      crash_points_injected: 0,
      acked_events_lost: 0,
      stale_lock_break_rounds: ROUNDS,
      exactly_one_acquired: exactlyOne,
      session_locked_rejections: lockedRejections,
      failures: failures.slice(0, 20),
    })
    expect(failures).toEqual([])
    expect(exactlyOne).toBe(ROUNDS)
    expect(lockedRejections).toBe(ROUNDS)
  })
})
