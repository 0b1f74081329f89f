/**
 * S10: special files at every name the store opens (issue 10, item 2). A FIFO, a unix socket
 * and a character device are put, for real, at the log, the lock, the checkpoint, a
 * quarantine name, an older generation and a temp name; every entry point must answer
 * without blocking: a typed `NOT_REGULAR_FILE` where the name matters, or the file left
 * alone where it is not the store's to read. Each test has an explicit timeout, so a
 * regression (an open that blocks on a FIFO) fails instead of hanging the run.
 */
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, lstatSync, readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionWriter } from '@agent-ledger/session-store'

import { CORE_CHECKPOINT_FILE_NAME } from '../src/layout.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { closedSessionInputs, coreTestStore, makeTempDir, writeCoreSession } from './support/sessions.ts'

/** Generous: the slowest case does a few opens; a blocked open never returns at all. */
const NO_HANG_MS = 20_000

let temp: { path: string; cleanup: () => void }
let store: JsonlStore
const servers: Server[] = []

beforeEach(() => {
  temp = makeTempDir()
  ;({ store } = coreTestStore(temp.path))
})

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()))
  temp.cleanup()
})

type Kind = 'fifo' | 'socket' | 'character-device'

/** Makes a special file of `kind` at `path`; returns a reason when this machine cannot. */
async function makeSpecial(kind: Kind, path: string): Promise<string | null> {
  if (kind === 'fifo') {
    const made = spawnSync('mkfifo', ['-m', '600', path])
    return made.status === 0 ? null : `mkfifo failed: ${made.stderr.toString()}`
  }
  if (kind === 'socket') {
    const server = createServer()
    servers.push(server)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(path, resolve)
    })
    return null
  }
  // A character device (1,3 is /dev/null): needs root (CAP_MKNOD).
  const made = spawnSync('mknod', ['-m', '600', path, 'c', '1', '3'])
  return made.status === 0 ? null : `mknod refused (${made.stderr.toString().trim()}): not root?`
}

const KINDS: readonly Kind[] = ['fifo', 'socket', 'character-device']

async function caught(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

/** Where the write open's torn-tail repair kept the bytes (relative to the root). */
function quarantinedTo(writer: SessionWriter): string | undefined {
  return writer.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail')?.quarantinedTo
}

/** A special file at `name` inside the directory of session `id`, or null (with the reason printed) when impossible. */
async function placeSpecial(kind: Kind, id: string, name: string): Promise<string | null> {
  const path = join(temp.path, id, name)
  const reason = await makeSpecial(kind, path)
  if (reason !== null) {
    console.log(`S10: skipped the ${kind} case at ${name}: ${reason}`)
    return null
  }
  return path
}

describe('S10: special files never hang the store', () => {
  for (const kind of KINDS) {
    it(
      `S10: a ${kind} at the log: openReader, openWriter, verify and readEvents refuse NOT_REGULAR_FILE; list reports it and lists the rest`,
      async () => {
        await writeCoreSession(store, 'good', closedSessionInputs(3))
        await writeCoreSession(store, 'special', [])
        // Replace the log by the special file (the directory stays).
        spawnSync('rm', [join(temp.path, 'special', LOG_FILE_NAME)])
        const path = await placeSpecial(kind, 'special', LOG_FILE_NAME)
        if (path === null) return
        for (const attempt of [
          () => store.openReader('special'),
          () => store.openWriter('special'),
          () => store.verify('special'),
          async () => {
            for await (const event of store.readEvents('special')) void event
          },
        ]) {
          const error = await caught(attempt())
          expect(error.code).toBe('NOT_REGULAR_FILE')
          expect(error.location?.file).toBe(`special/${LOG_FILE_NAME}`)
          expect(error.details['which']).toBe('log')
        }
        const listed = await store.list()
        expect(listed.sessions.map((session) => session.id)).toEqual(['good'])
        expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
          ['special', 'NOT_REGULAR_FILE'],
        ])
        // Untouched: still the special file, no lock left, nothing created beside it (writer.lease
        // is the fencing epoch the session's own create left).
        expect(lstatSync(path).isFile()).toBe(false)
        expect(readdirSync(join(temp.path, 'special')).sort()).toEqual([LOG_FILE_NAME, 'writer.lease'])
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} at writer.lock: openWriter refuses NOT_REGULAR_FILE naming the lock; reads, verify and list are unaffected`,
      async () => {
        await writeCoreSession(store, 'locked', closedSessionInputs(3))
        const path = await placeSpecial(kind, 'locked', 'writer.lock')
        if (path === null) return
        const error = await caught(store.openWriter('locked'))
        expect(error).toMatchObject({ code: 'NOT_REGULAR_FILE', location: { file: 'locked/writer.lock' } })
        expect(error.details).toMatchObject({ which: 'lock', kind })
        expect((await store.openReader('locked')).lastSeq).toBe(2)
        expect(await store.verify('locked')).toMatchObject({ status: 'ok', lastSeq: 2 })
        expect((await store.list()).sessions.map((session) => session.id)).toEqual(['locked'])
        expect(lstatSync(path).isFile()).toBe(false)
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} at the checkpoint name is ignored with a warning (a cache: reason unreadable), never opened blocking`,
      async () => {
        const { store: watched, warnings } = coreTestStore(temp.path, {
          checkpoint: { minLogBytes: 0, minGrowthRatio: 0 },
        })
        await writeCoreSession(watched, 'ckpt', closedSessionInputs(3))
        spawnSync('rm', ['-f', join(temp.path, 'ckpt', CORE_CHECKPOINT_FILE_NAME)])
        const path = await placeSpecial(kind, 'ckpt', CORE_CHECKPOINT_FILE_NAME)
        if (path === null) return
        const read = await watched.openReader('ckpt')
        // The backend says what it found at the name, without reading it; the core replays and
        // warns (as the JSONL store API of older versions did).
        expect(read).toMatchObject({ lastSeq: 2, checkpoint: { used: false, reason: 'unreadable' } })
        expect(warnings.map((warning) => [warning.code, warning.details['reason']])).toEqual([
          ['CHECKPOINT_IGNORED', 'unreadable'],
        ])
        expect(warnings[0]!.message).toContain(
          `ckpt/${CORE_CHECKPOINT_FILE_NAME}: expected a regular file, found a`,
        )
        expect(await watched.verify('ckpt')).toMatchObject({ status: 'ok' })
        const writer = await watched.openWriter('ckpt')
        expect(writer.durableSeq).toBe(2)
        await writer.close()
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} at the next quarantine name is skipped (O_EXCL), never opened; the torn tail goes to the next name`,
      async () => {
        const log = await writeCoreSession(store, 'torn', closedSessionInputs(3))
        const size = lstatSync(log).size
        appendFileSync(log, '{"seq":3,"ti')
        const path = await placeSpecial(kind, 'torn', `${LOG_FILE_NAME}.torn-${size}`)
        if (path === null) return
        const writer = await store.openWriter('torn')
        expect(quarantinedTo(writer)).toBe(`torn/${LOG_FILE_NAME}.torn-${size}-1`)
        await writer.close()
        expect(lstatSync(path).isFile()).toBe(false)
        expect(await store.verify('torn')).toMatchObject({ status: 'ok', lastSeq: 2 })
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} as the only (older) generation session.jsonl: every open refuses NOT_REGULAR_FILE; list reports it`,
      async () => {
        await writeCoreSession(store, 'good', closedSessionInputs(3))
        spawnSync('mkdir', ['-m', '700', join(temp.path, 'old')])
        const path = await placeSpecial(kind, 'old', 'session.jsonl')
        if (path === null) return
        for (const attempt of [
          () => store.openReader('old'),
          () => store.openWriter('old'),
          () => store.verify('old'),
          () => store.backend.capabilities.migrate.migrate('old'),
        ]) {
          expect((await caught(attempt())).code).toBe('NOT_REGULAR_FILE')
        }
        const listed = await store.list()
        expect(listed.sessions.map((session) => session.id)).toEqual(['good'])
        // The listing reads an older generation through the in-memory migration: refused like every open.
        expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
          ['old', 'NOT_REGULAR_FILE'],
        ])
        expect(existsSync(join(temp.path, 'old', LOG_FILE_NAME))).toBe(false)
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} at a temp name is never opened; the next writer removes the name like any leftover temp`,
      async () => {
        await writeCoreSession(store, 'temps', closedSessionInputs(3))
        const path = await placeSpecial(kind, 'temps', '.tmp-create-0123456789abcdef')
        if (path === null) return
        expect((await store.openReader('temps')).lastSeq).toBe(2)
        const writer = await store.openWriter('temps')
        await writer.close()
        expect(existsSync(path)).toBe(false)
      },
      NO_HANG_MS,
    )
  }
})
