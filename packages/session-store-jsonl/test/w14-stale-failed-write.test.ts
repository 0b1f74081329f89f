// W14: a writer stopped between its fence checks and its write() whose write then FAILS (here
// EFBIG under `ulimit -f`, as a full disk would) after another owner took the session over and
// appended. Its rollback must not truncate the log to its own stale offset: that would cut the
// new owner's acknowledged events. Real faults: a child process SIGSTOPs itself at the write, the
// parent takes the lease over and flushes, SIGCONT, the kernel refuses the child's write.
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { createJsonlStore } from '../src/index.ts'
import type { JsonlStore } from '../src/index.ts'
import { bundleChild, spawnChild } from './support/children.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w14-'))
/** `ulimit -f` in bash counts 1024-byte blocks: the child may grow no file past 16 KiB. */
const LIMIT_BLOCKS = 16

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

const note = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

async function readAll(store: JsonlStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

describe('W14: a stale writer whose write fails after a takeover', () => {
  it(
    "leaves the new owner's acknowledged events: no rollback below them, the stale writer refused",
    async () => {
      const root = join(scratch, 'root')
      const id = 'taken'
      const bundle = await bundleChild('stale-appender.ts')
      const script = `trap "" XFSZ; ulimit -f ${LIMIT_BLOCKS}; exec "$@"`
      const child = spawnChild('bash', ['-c', script, 'bash', process.execPath, bundle, root, id])
      const exited = child.exited
      try {
        await child.waitForLine((line) => line === 'ACK 1')
        await child.waitForLine((line) => line === 'STOPPING')
        // The child is stopped (SIGSTOP to itself) between its checks and its write.
        const owner = createJsonlStore({ root, owner: 'new-owner', jsonl: { lock: { heartbeatMs: 0 } } })
        const writer = await owner.openWriter(id, { takeover: true })
        const owned = [0, 1, 2].map((index) => writer.append(note(`owner ${index} ${'y'.repeat(8_000)}`)))
        const { durableSeq } = await writer.flush()
        expect(durableSeq).toBe(4)
        const path = join(root, id, LOG_FILE_NAME)
        const ownerSize = statSync(path).size
        // Past the child's file size limit: its O_APPEND write (at the end) fails with EFBIG.
        expect(ownerSize).toBeGreaterThan(LIMIT_BLOCKS * 1024)
        process.kill(child.pid, 'SIGCONT')
        const failed = await child.waitForLine((line) => line.startsWith('FAILED ') || line === 'ACK 2')
        expect(failed.startsWith('FAILED ')).toBe(true)
        const report = JSON.parse(failed.slice('FAILED '.length)) as { code: string; message: string }
        expect(await exited).toEqual({ code: 0, signal: null })

        // The new owner's acknowledged events are all there, and it can go on writing.
        expect(statSync(path).size).toBe(ownerSize)
        const events = await readAll(owner, id)
        expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4])
        expect(events.slice(2)).toEqual(owned)
        expect(writer.append(note('after')).seq).toBe(5)
        expect((await writer.flush()).durableSeq).toBe(5)
        await writer.close()
        expect(await owner.verify(id)).toMatchObject({ status: 'ok', events: 6 })
        await owner.close()
        // Refused for good (the lease is another's), not DISK_FULL: freeing space cannot make it ours.
        expect(report.code).toBe('FENCED')
      } finally {
        if (child.process.exitCode === null && child.process.signalCode === null) {
          child.process.kill('SIGKILL')
          process.kill(child.pid, 'SIGCONT')
        }
        await exited
      }
    },
    testTime(60_000),
  )
})
