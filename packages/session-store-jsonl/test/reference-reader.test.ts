import { execFile, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'

import {
  crc32cHex,
  encodeEventLine,
  encodeJsonLine,
  LOG_FILE_NAME,
  verifyLineChecksum,
} from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { seededRandom } from './support/fault-fs.ts'
import {
  closedSessionInputs,
  coreTestStore,
  forEachConcurrently,
  lineStarts,
  makeTempDir,
  placeSession,
  turnInputs,
  withFlippedByte,
  writeCoreSession,
} from './support/sessions.ts'

const referenceReader = fileURLToPath(new URL('../reference/read-session.mjs', import.meta.url))
const formatDocument = readFileSync(fileURLToPath(new URL('../FORMAT.md', import.meta.url)), 'utf8')

let temp: { path: string; cleanup: () => void }
let store: JsonlStore

beforeAll(() => {
  temp = makeTempDir()
  store = coreTestStore(temp.path).store
})

afterAll(() => {
  temp.cleanup()
})

function runReference(path: string): { status: number | null; events: string[]; stderr: string } {
  const result = spawnSync(process.execPath, [referenceReader, path], { encoding: 'utf8' })
  const events = result.stdout === '' ? [] : result.stdout.replace(/\n$/, '').split('\n')
  return { status: result.status, events, stderr: result.stderr }
}

function runReferenceAsync(
  path: string,
): Promise<{ status: number | null; events: string[]; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [referenceReader, path],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null
        const events = stdout === '' ? [] : stdout.replace(/\n$/, '').split('\n')
        resolve({ status, events, stderr })
      },
    )
  })
}

/** What the library reads: the events (as JSON lines) before any damage, and the verdict. */
async function libraryView(
  id: string,
): Promise<{ events: string[]; verdict: 'ok' | 'torn-tail' | 'damaged' }> {
  const events: string[] = []
  try {
    for await (const event of store.readEvents(id)) events.push(JSON.stringify(event))
  } catch (error) {
    if (!SessionStoreError.is(error)) throw error
    return { events, verdict: 'damaged' }
  }
  const report = await store.verify(id)
  return { events, verdict: report.status }
}

describe('FORMAT.md and the reference reader', () => {
  it('the worked CRC example of FORMAT.md is what the codec computes', () => {
    const marker = formatDocument.indexOf('<!-- worked-example -->')
    expect(marker).toBeGreaterThan(0)
    const example = /```\n(.*)\n```/.exec(formatDocument.slice(marker))![1]!
    const line = Buffer.from(example, 'utf8')
    expect(verifyLineChecksum(line)).toBe(true)
    const hashed = line.subarray(0, line.length - 18)
    expect(hashed.length).toBe(80)
    expect(crc32cHex(hashed)).toBe('79ea275d')
    expect(formatDocument).toContain(hashed.toString('utf8'))
    const event = { seq: 0, time: '2026-01-01T00:00:00.000Z', type: 'turn/start', data: { turn: 1 } }
    expect(encodeEventLine(event).toString('utf8')).toBe(`${example}\n`)
    expect(crc32cHex(Buffer.from('123456789'))).toBe('e3069283')
  })

  it('every line of the FORMAT.md examples is valid, and the sample session reads in both readers', async () => {
    const block = /A complete session[^`]*```jsonl\n([\s\S]*?)```/.exec(formatDocument)![1]!
    for (const text of block.trimEnd().split('\n'))
      expect(verifyLineChecksum(Buffer.from(text)), text).toBe(true)
    const header = /Example:\n\n<!-- prettier-ignore -->\n```jsonl\n(\{"format".*)\n```/.exec(
      formatDocument,
    )![1]!
    expect(verifyLineChecksum(Buffer.from(header))).toBe(true)
    const path = placeSession(temp.path, 'demo-1', block)
    const reference = runReference(path)
    expect(reference.status).toBe(0)
    expect(reference.events).toHaveLength(8)
    expect((await libraryView('demo-1')).events).toEqual(reference.events)
  })

  it('prints exactly the events the library wrote, for sessions written through the library', async () => {
    const sessions: [string, Parameters<typeof writeCoreSession>[2]][] = [
      ['empty', []],
      [
        'turns',
        [...turnInputs(1), ...turnInputs(2, { toolOutput: 'é \u2028 \u2029 "quoted" \\ back\nslash' })],
      ],
      ['long-session-with-three-hundred-events', closedSessionInputs(300)],
      [
        'odd',
        [
          {
            type: 'plan/update',
            data: JSON.parse('{"__proto__":{"x":1},"steps":[]}') as unknown,
            ignorable: true,
          } as never,
          { type: 'user/message', data: { message: { role: 'user', content: 'lone \ud800 surrogate' } } },
        ],
      ],
    ]
    for (const [id, inputs] of sessions) {
      const path = await writeCoreSession(store, id, inputs)
      const reference = await runReferenceAsync(path)
      expect(reference.status, reference.stderr).toBe(0)
      expect(reference.stderr).toBe('')
      const library = await libraryView(id)
      expect(library.verdict).toBe('ok')
      expect(reference.events).toEqual(library.events)
      expect(reference.events).toHaveLength(inputs.length)
    }
  })

  it('agrees with the library on torn tails and damaged files: same verdict, same good prefix', async () => {
    const content = readFileSync(join(temp.path, 'long-session-with-three-hundred-events', LOG_FILE_NAME))
    const starts = lineStarts(content)
    const random = seededRandom(42)
    const cases: [string, Buffer, 'ok' | 'torn-tail' | 'damaged'][] = [
      ['torn-cut', content.subarray(0, content.length - 7), 'torn-tail'],
      ['torn-zeros', Buffer.concat([content, Buffer.alloc(512)]), 'torn-tail'],
      ['torn-line', Buffer.concat([content, Buffer.from('{"seq":300,"ti\n\u0000\u0000')]), 'torn-tail'],
      ['flip', withFlippedByte(content, starts[100]! + 25, 0x01), 'damaged'],
      ['gap', Buffer.concat([content.subarray(0, starts[50]), content.subarray(starts[51])]), 'damaged'],
      [
        'glued',
        Buffer.concat([
          content,
          Buffer.from('{"seq":300,"ti'),
          encodeEventLine({
            seq: 300,
            time: '2026-01-01T00:00:00.000Z',
            type: 'turn/start',
            data: { turn: 9 },
          }),
        ]),
        'damaged',
      ],
      [
        'unknown-type',
        Buffer.concat([
          content,
          encodeEventLine({ seq: 300, time: '2026-01-01T00:00:00.000Z', type: 'future/thing', data: {} }),
        ]),
        'damaged',
      ],
    ]
    for (let index = 0; index < 8; index += 1) {
      const at = Math.floor(random() * content.length)
      const cut = random() < 0.5
      cases.push([
        `random-${index}`,
        cut ? content.subarray(0, at) : withFlippedByte(content, at, 1 << Math.floor(random() * 8)),
        cut ? 'torn-tail' : 'damaged',
      ])
    }
    await forEachConcurrently(cases, 4, async ([id, bytes, expected]) => {
      const path = placeSession(temp.path, id, bytes)
      const library = await libraryView(id)
      const reference = await runReferenceAsync(path)
      const referenceVerdict =
        reference.status === 2 ? 'damaged' : reference.stderr.includes('torn tail') ? 'torn-tail' : 'ok'
      if (bytes.length < starts[1]!) {
        // A cut inside the header line: FORMAT.md (and its reference reader) read an empty
        // session with a torn tail (RELIABILITY T4); the core refuses a log without a whole
        // header as damage. The one place the two disagree, pinned here until the core holds T4.
        expect([id, referenceVerdict, library.verdict]).toEqual([id, 'torn-tail', 'damaged'])
        expect(reference.stderr).toContain('no valid header: an empty session')
        expect([reference.events, library.events]).toEqual([[], []])
        return
      }
      expect([id, referenceVerdict]).toEqual([id, library.verdict])
      expect(reference.events, id).toEqual(library.events)
      if (!id.startsWith('random')) expect([id, library.verdict]).toEqual([id, expected])
      else if (expected === 'damaged') expect(['damaged', 'torn-tail', 'ok']).toContain(library.verdict)
    })
  })

  it('refuses a newer version without printing anything', () => {
    const path = join(temp.path, 'v99.jsonl')
    // Checksummed: a header failing its checksum is damage, never an upgrade request (FORMAT.md 8).
    writeFileSync(
      path,
      encodeJsonLine(
        '{"format":"agent-ledger.session","version":99,"id":"x","createdAt":"2030-01-01T00:00:00.000Z","integrity":"crc32c"}',
      ),
    )
    const reference = runReference(path)
    expect(reference.status).toBe(2)
    expect(reference.events).toEqual([])
    expect(reference.stderr).toMatch(/newer agent-ledger.*upgrade/)
  })
})
