import { appendFileSync, readFileSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import { encodeEventLine } from '@agent-ledger/session-store-jsonl/format'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { waitUntil } from '../../../tooling/test-time.ts'
import { runCli } from '../src/index.ts'
import { logPath, makeRoot, testStore, writeSession } from './support/sessions.ts'

let root: string
let cleanup: () => void

beforeEach(() => {
  ;({ root, cleanup } = makeRoot())
})
afterEach(() => cleanup())

/** A `tail -f` running in-process, with its output so far and a way to stop it. */
function follow(args: readonly string[]): {
  out: () => string
  err: () => string
  stop: () => Promise<number>
  done: Promise<number>
} {
  let stdout = ''
  let stderr = ''
  const controller = new AbortController()
  const done = runCli(['tail', '-f', '--interval', '20', '--json', ...args], {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    signal: controller.signal,
  })
  return {
    out: () => stdout,
    err: () => stderr,
    stop: async () => {
      controller.abort()
      return done
    },
    done,
  }
}

async function until(what: string, predicate: () => boolean): Promise<void> {
  await waitUntil(what, predicate)
}

function seqsOf(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { seq: number }).seq)
}

describe('tail -f', () => {
  it('T5: prints appended events as a writer flushes them, read-only, and exits 0 when stopped', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    const tail = follow(['-n', '2', join(root, 'a1')])
    await until('the last two events', () => seqsOf(tail.out()).length === 2)
    expect(seqsOf(tail.out())).toEqual([6, 7])
    const writer = await store.openWriter('a1')
    writer.append({ type: 'turn/start', data: { turn: 2 } })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'more' } } })
    await writer.flush()
    await until('the appended events', () => seqsOf(tail.out()).length === 4)
    writer.append({ type: 'turn/end', data: { turn: 2, reason: 'completed' } })
    await writer.close()
    await until('the last event', () => seqsOf(tail.out()).length === 5)
    expect(await tail.stop()).toBe(0)
    expect(seqsOf(tail.out())).toEqual([6, 7, 8, 9, 10])
    expect(tail.err()).toBe('')
  })

  it('T5: an unterminated last line is a write in progress: not printed, not an error, printed once complete', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    const line = encodeEventLine({
      seq: 8,
      time: '2026-01-02T00:00:00.000Z',
      type: 'turn/start',
      data: { turn: 2 },
    })
    const tail = follow(['-n', '1', join(root, 'a1')])
    // The last event printed means the follower has read to the end of the log: a line appended
    // now is one it must see (with `-n 0` and no wait, a follower that opened the log only after
    // the whole line was written, as on a loaded machine, started past it and never printed it).
    await until('the last event', () => seqsOf(tail.out()).length === 1)
    appendFileSync(logPath(root, 'a1'), line.subarray(0, 20))
    await sleep(300)
    expect(seqsOf(tail.out())).toEqual([7])
    expect(tail.err()).toBe('')
    appendFileSync(logPath(root, 'a1'), line.subarray(20))
    await until('the completed line', () => seqsOf(tail.out()).length === 2)
    expect(await tail.stop()).toBe(0)
    expect(seqsOf(tail.out())).toEqual([7, 8])
  })

  it('T3/T5: a writer repairing a garbage tail under the follower (quarantine + truncate + append) is not damage', async () => {
    const store = testStore(root)
    await writeSession(store, 'a1', { turns: 1 })
    appendFileSync(logPath(root, 'a1'), 'x\n')
    const tail = follow(['-n', '1', join(root, 'a1')])
    await until('the last event', () => seqsOf(tail.out()).length === 1)
    const writer = await store.openWriter('a1')
    expect(writer.recovery.backendRepairs).toEqual([
      expect.objectContaining({ kind: 'torn-tail', quarantinedTo: expect.any(String) as unknown }),
    ])
    writer.append({ type: 'turn/start', data: { turn: 2 } })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'after the repair' } } })
    await writer.close()
    await until('the events after the repair', () => seqsOf(tail.out()).length === 3)
    expect(await tail.stop()).toBe(0)
    expect(seqsOf(tail.out())).toEqual([7, 8, 9])
    expect(tail.err()).toBe('')
  })

  it('I4: stops with exit 1 and the typed error when a damaging line lands (a seq gap)', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    const tail = follow(['-n', '1', join(root, 'a1')])
    // Appended once the follower has read to the end, so it is a line landing under a follower.
    await until('the last event', () => seqsOf(tail.out()).length === 1)
    appendFileSync(
      logPath(root, 'a1'),
      encodeEventLine({ seq: 9, time: '2026-01-02T00:00:00.000Z', type: 'turn/start', data: { turn: 2 } }),
    )
    expect(await tail.done).toBe(1)
    expect(tail.err()).toMatch(
      /^agent-ledger: SEQ_GAP in .*a1\/session\.v4\.jsonl line 10 \(offset \d+\): .*expected "seq" to be 8, found 9/,
    )
  })

  it('exits 2 with FILE_GONE when the log is removed while following', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    const tail = follow(['-n', '1', join(root, 'a1')])
    // The last event printed means the follower has the log open (a fixed sleep raced the open
    // on a loaded machine, which then reported SESSION_NOT_FOUND).
    await until('the last event', () => seqsOf(tail.out()).length === 1)
    unlinkSync(logPath(root, 'a1'))
    expect(await tail.done).toBe(2)
    expect(tail.err()).toMatch(/^agent-ledger: FILE_GONE: .*was removed while following it/)
  })

  it('never writes: the followed file is byte-identical after following a torn tail', async () => {
    await writeSession(testStore(root), 'a1', { turns: 1 })
    appendFileSync(logPath(root, 'a1'), '{"seq":8,"ti')
    const before = readFileSync(logPath(root, 'a1'))
    const tail = follow([join(root, 'a1')])
    await until('the existing events', () => seqsOf(tail.out()).length === 8)
    await sleep(100)
    expect(await tail.stop()).toBe(0)
    expect(readFileSync(logPath(root, 'a1')).equals(before)).toBe(true)
  })
})
