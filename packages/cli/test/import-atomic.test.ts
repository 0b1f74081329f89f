/**
 * A partial import is never published: every new session is created with all its batches as
 * one streamed seed. Real faults: a child process importing a large generated source is
 * SIGKILLed mid-import (JSONL and PostgreSQL), and a source with a malformed line near its
 * end is refused in strict mode.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { importEventRegistry, importSource, splitLines } from '@agent-ledger/import'
import type { SourceLine } from '@agent-ledger/import'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { launchArgs } from '../../../tooling/launch-args.ts'
import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { StoreSink } from '../src/commands/import-write.ts'

import { TRANSCRIPT_SESSION_ID, transcriptLines } from './support/claude-transcript.ts'
import { adminUrl, createDatabase, pgTitle, sqlOnce } from './support/pg.ts'
import { cli, logLines, makeRoot } from './support/sessions.ts'

const ID = `claude-${TRANSCRIPT_SESSION_ID}`
const CHILD = fileURLToPath(new URL('./support/cli-child.ts', import.meta.url))

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-import-atomic-'))
})
afterEach(() => cleanup())

/** A source of about 5 MB: one main session of many batches (2,048 events each). */
function largeSource(): string {
  const file = join(root, 'large.jsonl')
  writeFileSync(file, `${transcriptLines({ turns: 900, outputBytes: 3000 }).join('\n')}\n`)
  return file
}

/**
 * Runs `agent-ledger import` from source in a child process and SIGKILLs it once `midway()`
 * says the session is being written (and before it is published).
 */
async function killMidImport(
  args: readonly string[],
  midway: () => Promise<boolean>,
): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, launchArgs(CHILD, args), { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.stdout.resume()
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('close', (_code, signal) => resolve(signal)),
  )
  let finished = false
  void exited.then(() => (finished = true))
  for (;;) {
    if (finished) break
    if (await midway()) {
      child.kill('SIGKILL')
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return { signal: await exited, stderr }
}

async function listedIds(store: string): Promise<string[]> {
  const listed = await cli(['list', '--store', store, '--json'])
  expect(listed.code, listed.stderr).toBe(0)
  return (JSON.parse(listed.stdout) as { sessions: { id: string }[] }).sessions.map((session) => session.id)
}

/** The temp files of a session directory (`.tmp-*`), with their sizes. */
function temps(store: string): { name: string; bytes: number }[] {
  const directory = join(store, ID)
  if (!existsSync(directory)) return []
  return readdirSync(directory)
    .filter((name) => name.startsWith('.tmp-'))
    .map((name) => ({ name, bytes: statSync(join(directory, name), { throwIfNoEntry: false })?.size ?? 0 }))
}

describe('import publishes a session whole or not at all', () => {
  it(
    'JSONL: a child SIGKILLed mid-import leaves no session; a re-import completes and equals a one-shot import',
    async () => {
      const source = largeSource()
      const oneShot = join(root, 'one-shot')
      const once = await cli(['import', source, '--root', oneShot, '--json', '--no-progress'])
      expect(once.code, once.stderr).toBe(0)
      const expected = logLines(oneShot, ID)
      const expectedBytes = statSync(join(oneShot, ID, 'session.v4.jsonl')).size

      const store = join(root, 'killed')
      let seenTemp = 0
      const killed = await killMidImport(
        ['import', source, '--root', store, '--json', '--no-progress'],
        () => {
          // Several batches staged in the temp file, far from the whole log: mid-import.
          seenTemp = Math.max(0, ...temps(store).map((temp) => temp.bytes))
          return Promise.resolve(seenTemp > 256 * 1024)
        },
      )
      expect(killed.signal, killed.stderr).toBe('SIGKILL')
      expect(seenTemp).toBeGreaterThan(0)
      expect(seenTemp).toBeLessThan(expectedBytes)
      expect(existsSync(join(store, ID, 'session.v4.jsonl'))).toBe(false)
      expect(await listedIds(store)).toEqual([])

      const again = await cli(['import', source, '--root', store, '--json', '--no-progress'])
      expect(again.code, again.stderr).toBe(0)
      const report = JSON.parse(again.stdout) as { sources: { sessions: { id: string; action: string }[] }[] }
      expect(report.sources[0]!.sessions).toEqual([expect.objectContaining({ id: ID, action: 'created' })])
      expect(logLines(store, ID)).toEqual(expected)
      expect(temps(store)).toEqual([])
      expect(await listedIds(store)).toEqual([ID])
      const verified = await cli(['verify', ID, '--store', store])
      expect(verified.code, verified.stderr).toBe(0)
    },
    testTime(240_000),
  )

  it(
    'a line near the end found malformed in the second pass (strict mode): the import fails after batches were written and nothing is published',
    async () => {
      const good = transcriptLines({ turns: 700, outputBytes: 600 })
      // The source changes between the passes (an agent rewriting it): pass 1 sees it whole,
      // pass 2 finds a torn record near the end, after the main session's first batches.
      const bad = [...good]
      bad.splice(bad.length - 3, 1, '{"type":"user","message":')
      let passes = 0
      const reopen = (): AsyncIterable<SourceLine> => {
        passes += 1
        const text = `${(passes === 1 ? good : bad).join('\n')}\n`
        return splitLines(
          (async function* () {
            for (let at = 0; at < text.length; at += 64 * 1024) {
              await Promise.resolve()
              yield text.slice(at, at + 64 * 1024)
            }
          })(),
        )
      }
      const store = join(root, 'store')
      let now = '1970-01-01T00:00:00.000Z'
      const jsonl = createJsonlStore({ root: store, registry: importEventRegistry, clock: () => now })
      const sink = new StoreSink({
        store: jsonl,
        file: 'source.jsonl',
        setTime: (time) => (now = time),
        dryRun: false,
      })
      let handedOver = 0
      sink.onProgress = (_id, appended) => (handedOver = appended)
      const failure = await importSource(reopen, {
        file: 'source.jsonl',
        sha256: () => '0'.repeat(64),
        sink,
      }).then(
        () => null,
        (error: unknown) => error,
      )
      await sink.close()
      expect(passes).toBe(2)
      expect((failure as { code?: unknown } | null)?.code).toBe('MALFORMED_LINE')
      expect(handedOver).toBeGreaterThanOrEqual(2048)
      expect(existsSync(join(store, ID, 'session.v4.jsonl'))).toBe(false)
      expect(temps(store)).toEqual([])
      expect((await jsonl.list()).sessions).toEqual([])
      // The writer lock is released: a later import of the good source creates the session.
      passes = 0
      const retry = new StoreSink({
        store: jsonl,
        file: 'source.jsonl',
        setTime: (time) => (now = time),
        dryRun: false,
      })
      const goodAgain = (): AsyncIterable<SourceLine> =>
        splitLines(
          (async function* () {
            await Promise.resolve()
            yield `${good.join('\n')}\n`
          })(),
        )
      await importSource(goodAgain, { file: 'source.jsonl', sha256: () => '0'.repeat(64), sink: retry })
      expect(retry.outcomes).toEqual([expect.objectContaining({ id: ID, action: 'created' })])
    },
    testTime(240_000),
  )
})

describe.skipIf(adminUrl === null)(
  pgTitle('import into PostgreSQL publishes a session whole or not at all'),
  () => {
    it(
      'a child SIGKILLed mid-import leaves no session (its transaction rolled back); a re-import equals a one-shot JSONL import line for line',
      async () => {
        const source = largeSource()
        const oneShot = join(root, 'one-shot')
        const once = await cli(['import', source, '--root', oneShot, '--json', '--no-progress'])
        expect(once.code, once.stderr).toBe(0)
        const expected = logLines(oneShot, ID).filter((line) => line !== '')

        const url = await createDatabase(adminUrl!)
        const database = new URL(url).pathname.slice(1)
        let rowsWritten = false
        const killed = await killMidImport(
          ['import', source, '--store', url, '--json', '--no-progress'],
          async () => {
            // The schema migration (its own transaction, idle between its statements) has
            // committed: only the create's transaction can be the open one below.
            const migrated = await sqlOnce<{ n: number }>(
              url,
              "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'ledger_sessions'",
            )
            if (migrated[0]!.n === 0) return false
            // The create's transaction has written (an xid) and is still open: rows staged, unpublished.
            const open = await sqlOnce<{ n: number }>(
              adminUrl!,
              `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'agent-ledger-cli' AND backend_xid IS NOT NULL
            AND state = 'idle in transaction'`,
              [database],
            )
            if (open[0]!.n === 0) return false
            if (!rowsWritten) {
              rowsWritten = true
              return false
            }
            return true
          },
        )
        expect(killed.signal, killed.stderr).toBe('SIGKILL')
        expect(rowsWritten).toBe(true)
        // The server notices the closed connection and rolls the transaction back.
        await waitUntil(
          "the server to drop the killed import's connection",
          async () => {
            const busy = await sqlOnce<{ n: number }>(
              adminUrl!,
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'agent-ledger-cli'`,
              [database],
            )
            return busy[0]!.n === 0
          },
          { pollMs: 20 },
        )
        expect(await sqlOnce(url, 'SELECT session_id FROM ledger_sessions')).toEqual([])
        expect(await sqlOnce(url, 'SELECT seq FROM ledger_events LIMIT 1')).toEqual([])
        expect(await listedIds(url)).toEqual([])

        const again = await cli(['import', source, '--store', url, '--json', '--no-progress'])
        expect(again.code, again.stderr).toBe(0)
        const header = await sqlOnce<{ header_line: string }>(url, 'SELECT header_line FROM ledger_sessions')
        const rows = await sqlOnce<{ line: string }>(url, 'SELECT line FROM ledger_events ORDER BY seq')
        expect([header[0]!.header_line, ...rows.map((row) => row.line)]).toEqual(expected)
        expect(await listedIds(url)).toEqual([ID])
      },
      testTime(240_000),
    )
  },
)
