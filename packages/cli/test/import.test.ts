import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { loadZstdCodec } from '@agent-ledger/session-store-jsonl/format'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { openFilesUnder } from '../../../tooling/open-files.ts'
import { cli, makeRoot } from './support/sessions.ts'

const here = dirname(fileURLToPath(import.meta.url))
const synthetic = join(here, '..', '..', 'import', 'test', 'fixtures')
const shared = join(here, '..', '..', '..', '..', 'shared', 'fixtures', 'import')
const sharedAvailable = ((): boolean => {
  if (existsSync(shared)) return true
  if (process.env['CI'] === 'true') throw new Error(`shared import fixtures missing at ${shared}`)
  console.log(`skipping shared-fixture CLI tests: ${shared} does not exist`)
  return false
})()

interface ImportJson {
  sources: {
    file: string
    format: string
    sessions: { id: string; action: string; appended?: number; events: number }[]
    report?: unknown
  }[]
  failures: { file: string; error: { code: string } }[]
}

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-import-'))
})
afterEach(() => cleanup())

describe('agent-ledger import (the corpus of real recordings, packages/import/test/fixtures/corpus)', () => {
  it('imports every file with the default options, none refused; every session verifies', async () => {
    const corpus = join(synthetic, 'corpus')
    const sources = ['pi', 'openhands'].flatMap((dir) => readdirSync(join(corpus, dir)))
    const store = join(root, 'store')
    const result = await cli(['import', corpus, '--root', store, '--json', '--no-progress'])
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout) as ImportJson
    expect(report.failures).toEqual([])
    expect(report.sources).toHaveLength(sources.length)
    const ids = report.sources.flatMap((source) => source.sessions.map((session) => session.id))
    expect(readdirSync(store).sort()).toEqual([...ids].sort())
    for (const id of ids) {
      const verify = await cli(['verify', join(store, id), '--json'])
      expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
    }
  })
})

describe.skipIf(!sharedAvailable)('agent-ledger import (shared recordings)', () => {
  it('imports every recording of a directory; the sessions verify; importing again changes nothing', async () => {
    const store = join(root, 'store')
    const first = await cli(['import', shared, '--root', store, '--json', '--no-progress'])
    expect(first.code).toBe(0)
    const report = JSON.parse(first.stdout) as ImportJson
    expect(report.sources.map((source) => source.format).sort()).toEqual([
      'claude-code',
      'codex',
      'openhands',
    ])
    expect(report.sources.flatMap((source) => source.sessions.map((session) => session.action))).toEqual([
      'created',
      'created',
      'created',
    ])
    const ids = readdirSync(store).sort()
    expect(ids).toEqual([
      'claude-55604662-cf2a-4331-851a-ec234028f8ca',
      'codex-019c8a70-dda7-7f33-98ea-f30553347322',
      'openhands-basic',
    ])
    for (const id of ids) {
      const verify = await cli(['verify', join(store, id), '--json'])
      expect(JSON.parse(verify.stdout)).toMatchObject({ status: 'ok' })
    }
    const bytes = ids.map((id) => readFileSync(join(store, id, 'session.v4.jsonl')))
    const again = await cli(['import', shared, '--root', store, '--json'])
    expect(again.code).toBe(0)
    expect(
      (JSON.parse(again.stdout) as ImportJson).sources.flatMap((source) =>
        source.sessions.map((s) => s.action),
      ),
    ).toEqual(['unchanged', 'unchanged', 'unchanged'])
    expect(ids.map((id) => readFileSync(join(store, id, 'session.v4.jsonl')))).toEqual(bytes)
  })

  it('reads a .jsonl.zst Codex rollout like the plain file', async () => {
    const codexDir = join(shared, 'codex')
    const name = readdirSync(codexDir).find((file) => file.endsWith('.jsonl'))!
    const plain = readFileSync(join(codexDir, name))
    const codec = await loadZstdCodec()
    const zst = join(root, `${name}.zst`)
    writeFileSync(zst, codec.compressFrame(plain, 3))
    const run = await cli(['import', zst, '--dry-run', '--json'])
    expect(run.code).toBe(0)
    const source = (JSON.parse(run.stdout) as ImportJson).sources[0]!
    expect(source.format).toBe('codex')
    expect(source.sessions[0]).toMatchObject({
      id: 'codex-019c8a70-dda7-7f33-98ea-f30553347322',
      action: 'would-create',
      events: 33,
    })
  })
})

describe('agent-ledger import (synthetic sources)', () => {
  it('a grown source appends only its new events, after the earlier closers', async () => {
    const store = join(root, 'store')
    const source = join(root, 'rollout.jsonl')
    const lines = readFileSync(join(synthetic, 'codex', 'compacted.jsonl'), 'utf8').split('\n')
    writeFileSync(source, `${lines.slice(0, 8).join('\n')}\n`)
    const early = await cli(['import', source, '--root', store, '--json'])
    expect(early.code).toBe(0)
    const created = (JSON.parse(early.stdout) as ImportJson).sources[0]!.sessions[0]!
    expect(created.action).toBe('created')
    writeFileSync(source, lines.join('\n'))
    const grown = await cli(['import', source, '--root', store, '--json'])
    expect(grown.code).toBe(0)
    const appended = (JSON.parse(grown.stdout) as ImportJson).sources[0]!.sessions[0]!
    expect(appended.action).toBe('appended')
    expect(appended.appended).toBeGreaterThan(0)
    const verify = await cli(['verify', join(store, created.id), '--json'])
    expect(JSON.parse(verify.stdout)).toMatchObject({
      status: 'ok',
      events: created.events + appended.appended!,
    })
    const messages = await cli(['messages', join(store, created.id), '--json'])
    expect((JSON.parse(messages.stdout) as { content: unknown }[]).at(-1)).toEqual({
      role: 'assistant',
      content: 'You are welcome.',
    })
  })

  it.runIf(process.platform === 'linux')(
    'a directory whose sources partly fail (--lenient, exit 1) leaves no session log open in the process',
    async () => {
      const store = join(root, 'store')
      const result = await cli([
        'import',
        join(synthetic, 'claude-code'),
        '--root',
        store,
        '--json',
        '--lenient',
      ])
      expect(result.code).toBe(1)
      expect((JSON.parse(result.stdout) as ImportJson).failures.length).toBeGreaterThan(0)
      const open = openFilesUnder(store)
      expect(open).toEqual([])
    },
  )

  it('--dry-run writes nothing; a Claude Code tree imports its fork and sidechain', async () => {
    const store = join(root, 'store')
    const dry = await cli([
      'import',
      join(synthetic, 'claude-code', 'branches.jsonl'),
      '--root',
      store,
      '--dry-run',
    ])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(/would-create claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d-fork-b8 \(fork\)/)
    expect(existsSync(store)).toBe(false)
    const real = await cli(['import', join(synthetic, 'claude-code', 'branches.jsonl'), '--root', store])
    expect(real.code).toBe(0)
    const list = await cli(['list', store, '--json'])
    const sessions = (
      JSON.parse(list.stdout) as { sessions: { id: string; header: { parentSession?: string } }[] }
    ).sessions
    expect(sessions.map((session) => [session.id, session.header.parentSession ?? null]).sort()).toEqual([
      ['claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d', null],
      [
        'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d-agent-ag1',
        'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d',
      ],
      ['claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d-fork-b8', 'claude-0b7c1a52-1111-4a2b-9c3d-5e6f7a8b9c0d'],
    ])
  })

  it('a Codex rollout with two rollbacks imports as a family (main + 2 forks); importing again changes nothing', async () => {
    const store = join(root, 'store')
    const source = join(synthetic, 'codex', 'rollback.jsonl')
    const first = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(first.code).toBe(0)
    const main = 'codex-019d1000-aaaa-7bbb-8ccc-000000000002'
    const created = (JSON.parse(first.stdout) as ImportJson).sources[0]!.sessions
    // Events as counted by hand in the import package's codex.test.ts.
    expect(created.map((session) => [session.id, session.action, session.events])).toEqual([
      [main, 'created', 28],
      [`${main}-rollback-1`, 'created', 34],
      [`${main}-rollback-2`, 'created', 39],
    ])
    const list = await cli(['list', store, '--json'])
    const sessions = (
      JSON.parse(list.stdout) as { sessions: { id: string; header: { parentSession?: string } }[] }
    ).sessions
    expect(sessions.map((session) => [session.id, session.header.parentSession ?? null]).sort()).toEqual([
      [main, null],
      [`${main}-rollback-1`, main],
      [`${main}-rollback-2`, main],
    ])
    const again = await cli(['import', source, '--root', store, '--json', '--no-progress'])
    expect(
      (JSON.parse(again.stdout) as ImportJson).sources[0]!.sessions.map((session) => session.action),
    ).toEqual(['unchanged', 'unchanged', 'unchanged'])
    const messages = await cli(['messages', join(store, main), '--json'])
    expect((JSON.parse(messages.stdout) as { content: unknown }[]).map((message) => message.content)).toEqual(
      [
        'You are Codex.',
        '<environment_context>\n  <cwd>/home/user/proj</cwd>\n</environment_context>',
        'first question',
        'first answer',
      ],
    )
  })

  it('an OpenHands events/ directory (one JSON file per event) is one source', async () => {
    const events = join(root, 'conv-7', 'events')
    mkdirSync(events, { recursive: true })
    readFileSync(join(synthetic, 'openhands', 'v1-events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .forEach((line, index) => {
        const id = (JSON.parse(line) as { id: string }).id
        writeFileSync(
          join(events, `event-${String(index).padStart(5, '0')}-${id}.json`),
          JSON.stringify(JSON.parse(line), null, 2),
        )
      })
    // The conversation's state beside its events (V1 base_state.json, V0 metadata.json) is not a source.
    writeFileSync(
      join(root, 'conv-7', 'base_state.json'),
      JSON.stringify({ id: 'conv-7', agent: {} }, null, 2),
    )
    writeFileSync(join(root, 'conv-7', 'metadata.json'), JSON.stringify({ conversation_id: 'conv-7' }))
    const run = await cli(['import', join(root, 'conv-7'), '--dry-run', '--json'])
    expect(run.code).toBe(0)
    const sources = (JSON.parse(run.stdout) as ImportJson).sources
    expect(sources).toHaveLength(1)
    expect(sources[0]).toMatchObject({ format: 'openhands', sessions: [{ id: 'openhands-conv-7' }] })
    // The events/ directory named itself: the same one source, named after its conversation.
    const direct = await cli(['import', events, '--dry-run', '--json'])
    expect(direct.code).toBe(0)
    const named = (JSON.parse(direct.stdout) as ImportJson).sources
    expect(named).toHaveLength(1)
    expect(named[0]).toMatchObject({ format: 'openhands', sessions: [{ id: 'openhands-conv-7' }] })
    expect(named[0]!.report).toEqual(sources[0]!.report)
  })

  it("an events/ directory Python's json.dumps wrote: each stored source record is the file's bytes (issue 25 item 4)", async () => {
    // The real trajectory's events as OpenHands V0 writes events/<id>.json (json.dumps: ", " and ": ").
    const events = join(here, 'fixtures', 'openhands-v0-python', 'events')
    const store = join(root, 'store')
    const run = await cli(['import', events, '--root', store, '--no-progress'])
    expect(run.code).toBe(0)
    const log = readFileSync(join(store, 'openhands-openhands-v0-python', 'session.v4.jsonl'), 'utf8')
    const kept = log
      .split('\n')
      .filter((line) => line.includes('"import/source-record"'))
      .map((line) => (JSON.parse(line) as { data: { line: number; text?: string; record?: unknown } }).data)
    const files = ['0', '3', '4', '5'].map((id) => readFileSync(join(events, `${id}.json`), 'utf8'))
    expect(files[0]).toMatch(/^\{"id": 0, "timestamp": /)
    expect(kept.map((data) => data.text)).toEqual(files)
    expect(kept.every((data) => data.record === undefined)).toBe(true)
  })

  it('a malformed line is refused with file and line (exit 1); --lenient imports and counts it', async () => {
    const source = join(root, 'broken.jsonl')
    const lines = readFileSync(join(synthetic, 'codex', 'compacted.jsonl'), 'utf8').split('\n')
    lines[3] = '{"timestamp": "2026-03-03T08:00:01.000Z", "type": "event_m'
    writeFileSync(source, lines.join('\n'))
    const strict = await cli(['import', source, '--dry-run'])
    expect(strict.code).toBe(1)
    expect(strict.stderr).toMatch(/MALFORMED_LINE .*broken\.jsonl.* line 4: /)
    const lenient = await cli(['import', source, '--dry-run', '--lenient', '--json'])
    expect(lenient.code).toBe(0)
    expect(lenient.stdout).toMatch(/"malformedLines":1/)
  })

  it('refuses content it does not recognise and a --from the content contradicts', async () => {
    const source = join(root, 'notes.jsonl')
    writeFileSync(source, '{"note": "hello"}\n')
    const unknown = await cli(['import', source, '--dry-run'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/UNRECOGNIZED_FORMAT/)
    const wrong = await cli(['import', join(synthetic, 'pi', 'v2.jsonl'), '--from', 'codex', '--dry-run'])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/expected codex content .*found pi content/)
    const usage = await cli(['import', source, '--from', 'vim'])
    expect(usage.code).toBe(2)
  })

  it('--scan lists the session files under each default location without importing', async () => {
    const home = join(root, 'home')
    mkdirSync(join(home, '.claude', 'projects', '-home-user-proj'), { recursive: true })
    cpSync(
      join(synthetic, 'claude-code', 'compaction.jsonl'),
      join(home, '.claude', 'projects', '-home-user-proj', 's1.jsonl'),
    )
    mkdirSync(join(home, '.pi', 'agent', 'sessions', '--home-user--'), { recursive: true })
    cpSync(
      join(synthetic, 'pi', 'v1.jsonl'),
      join(home, '.pi', 'agent', 'sessions', '--home-user--', 'x.jsonl'),
    )
    const run = await cli(['import', '--scan', '--home', home, '--json'])
    expect(run.code).toBe(0)
    const found = (JSON.parse(run.stdout) as { sessions: { agent: string }[] }).sessions
    expect(found.map((item) => item.agent)).toEqual(['claude-code', 'pi'])
  })
})
