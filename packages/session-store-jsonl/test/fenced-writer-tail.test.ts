// A writer stopped past its lease between its fence checks and its O_APPEND write() (the chaos
// harness's seed 7): its batch lands after the new owner's events. Its after-write size check
// fails (never acknowledged), so its repeated seq ends the good prefix
// (docs/decisions/2026-12-02-repeated-seq-ends-the-prefix.md). The stale batch is real bytes of
// the store's write path (the same events written to a twin session), put after the owner's
// events with the file API as the resumed write() would put them.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterAll, describe, expect, it } from 'vitest'

import { LOG_FILE_NAME } from '../src/format.ts'
import { createJsonlStore } from '../src/index.ts'
import type { JsonlStore } from '../src/index.ts'
import { CRASH_STORE_OPTIONS } from './support/crash-harness.ts'
import { WORKLOAD_HEADER } from './support/workload.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-fenced-'))

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

type Encoding = 'plain' | 'zstd'

function storeAs(owner: string, encoding: Encoding): JsonlStore {
  return createJsonlStore({ root: join(scratch, encoding), ...CRASH_STORE_OPTIONS, owner, encoding })
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

async function readAll(store: JsonlStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

describe("a fenced writer's batch after the new owner's events", () => {
  it.each(['plain', 'zstd'] as const)(
    '%s: is never read, is quarantined byte for byte by the next writer, and the session stays usable',
    async (encoding) => {
      const root = join(scratch, encoding)
      mkdirSync(root, { mode: 0o700 })
      const logName = encoding === 'zstd' ? `${LOG_FILE_NAME}.zstd` : LOG_FILE_NAME
      const [first, second] = [user('zero'), user('one')]
      const stale = storeAs('stale-writer', encoding)
      // The stale writer's view: two events durable, then a batch of two more (seqs 2, 3).
      const writer = await stale.create({ id: 'fenced', header: WORKLOAD_HEADER })
      writer.append(first)
      writer.append(second)
      await writer.close()
      const twin = await stale.create({ id: 'twin', header: WORKLOAD_HEADER })
      twin.append(first)
      twin.append(second)
      await twin.flush()
      const before = statSync(join(root, 'twin', logName)).size
      twin.append(user('stale one'))
      twin.append(user('stale two'))
      await twin.close()
      const staleBatch = readFileSync(join(root, 'twin', logName)).subarray(before)
      await stale.close()

      // The new owner takes the session over and appends three events (seqs 2, 3, 4).
      const owner = storeAs('new-owner', encoding)
      const taken = await owner.openWriter('fenced')
      const owned = [
        taken.append(user('owner one')),
        taken.append(user('owner two')),
        taken.append(user('owner three')),
      ]
      await taken.close()
      const path = join(root, 'fenced', logName)
      const ownerBytes = readFileSync(path)
      // SIGCONT: the stopped writer's O_APPEND write lands at the end.
      appendFileSync(path, staleBatch)

      const reader = storeAs('reader', encoding)
      const events = await readAll(reader, 'fenced')
      expect(events.slice(2)).toEqual(owned)
      expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4])
      const read = await reader.openReader('fenced')
      expect(read.error).toBeNull()
      expect(read.lastSeq).toBe(4)
      expect(read.tornTail).toEqual({
        reason: 'fenced-writer',
        bytes: staleBatch.length,
        location: { file: `fenced/${logName}`, line: 7, offset: ownerBytes.length },
      })
      expect(readFileSync(path).length).toBe(ownerBytes.length + staleBatch.length)

      const next = await reader.openWriter('fenced')
      const repair = next.recovery.backendRepairs.find((entry) => entry.kind === 'torn-tail')
      expect(repair).toMatchObject({ droppedBytes: staleBatch.length })
      expect(repair!.description).toContain('fenced-writer')
      expect(readFileSync(join(root, repair!.quarantinedTo!)).equals(staleBatch)).toBe(true)
      expect(readFileSync(path).equals(ownerBytes)).toBe(true)
      expect(next.durableSeq).toBe(4)
      expect(next.append(user('after repair')).seq).toBe(5)
      await next.close()
      expect(await reader.verify('fenced')).toMatchObject({ status: 'ok', events: 6 })
      expect((await readAll(reader, 'fenced')).slice(2, 5)).toEqual(owned)
      await reader.close()
      await owner.close()
    },
  )
})
