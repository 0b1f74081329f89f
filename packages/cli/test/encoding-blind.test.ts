/**
 * Every command on the same session stored three ways: a plain v4 log, its zstd encoding,
 * and the v0 `session.jsonl` it was migrated from (read through the store's in-memory
 * migration). The output must be the same apart from file names and file facts (sizes,
 * offsets, format version and encoding of the file). Then the seven symptoms of issue 11,
 * each a test, on a compressed session.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { waitUntil } from '../../../tooling/test-time.ts'
import { runCli } from '../src/index.ts'
import { cli } from './support/sessions.ts'

/** The seed chapter's v0 session (2 turns, 4 tool calls), checked in with the store's migration tests. */
const V0_FIXTURE = fileURLToPath(
  new URL('../../session-store-jsonl/test/fixtures/v0/normal-tool-calls.jsonl', import.meta.url),
)

const VARIANTS = ['plain', 'zstd', 'v0'] as const
type Variant = (typeof VARIANTS)[number]

const ID = 's1'
const made: string[] = []

/**
 * A store root holding session `s1` as `variant`. All three hold the same events and the same
 * header (the migrated one, `migratedFrom` included): `v0` is the fixture as `session.jsonl`;
 * `plain` is its migration with the v0 file then removed (compress refuses a directory that
 * still holds an older generation); `zstd` is that plain log compressed.
 */
async function makeRoot(variant: Variant): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), `al-cli-blind-${variant}-`))
  made.push(root)
  mkdirSync(join(root, ID), { mode: 0o700 })
  cpSync(V0_FIXTURE, join(root, ID, 'session.jsonl'))
  if (variant === 'v0') return root
  const store = createJsonlStore({ root })
  const { migrate, compress } = store.backend.capabilities
  await migrate.migrate(ID)
  rmSync(join(root, ID, 'session.jsonl'))
  if (variant === 'zstd') await compress.compress(ID)
  await store.close()
  return root
}

/** The log file name each variant's store reads. */
const LOG_NAME: Record<Variant, string> = {
  plain: 'session.v4.jsonl',
  zstd: 'session.v4.jsonl.zstd',
  v0: 'session.jsonl',
}

/**
 * Output with the file names and file facts taken out: the root, the log's name (and the
 * padding after it), byte sizes and offsets, the file's format version and encoding, the v0
 * note, and the warning a write open gives about the removed v0 source of the fixture.
 */
function normalize(text: string, root: string): string {
  return text
    .split(root)
    .join('<root>')
    .replace(/session(\.v4)?\.jsonl(\.zstd)?(?!\.)/g, '<log>')
    .replace(/<log> +/g, '<log> ')
    .replace(/\b\d+(\.\d+)? (B|kB|MB)\b/g, '<size>')
    .replace(/offset \d+/g, 'offset <n>')
    .replace(/log v\d (plain|zstd)/g, 'log <generation>')
    .replace(/"(bytes|encoding|version)":("[a-z]+"|\d+)/g, '"$1":<fact>')
    .replace(/^agent-ledger: note: s1 holds <log> \(format v0\).*\n/m, '')
    .replace(/^agent-ledger: warning: s1\/<log>, the generation s1 was migrated from, is gone.*\n/m, '')
}

const roots = {} as Record<Variant, string>

beforeAll(async () => {
  for (const variant of VARIANTS) roots[variant] = await makeRoot(variant)
})

afterAll(() => {
  for (const root of made) rmSync(root, { recursive: true, force: true })
})

/** Runs a command on `s1` of a root (or on the root itself for `list`) and normalizes it. */
async function runOn(
  root: string,
  argv: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const target = argv[0] === 'list' ? root : join(root, ID)
  const run = await cli([argv[0]!, target, ...argv.slice(1)])
  return { code: run.code, stdout: normalize(run.stdout, root), stderr: normalize(run.stderr, root) }
}

/** The same command on the three variants: the outputs, by variant. */
async function onEach(
  argv: readonly string[],
  rootsFor: Record<Variant, string> = roots,
): Promise<Record<Variant, { code: number; stdout: string; stderr: string }>> {
  const out = {} as Record<Variant, { code: number; stdout: string; stderr: string }>
  for (const variant of VARIANTS) out[variant] = await runOn(rootsFor[variant], argv)
  return out
}

describe('every read-only command gives the same output on a plain, a compressed and a migrated v0 session', () => {
  const SAME: readonly (readonly string[])[] = [
    ['inspect', '--no-progress'],
    ['cat'],
    ['cat', '--json', '--from', '3', '--to', '9'],
    ['tail', '-n', '2'],
    ['tail', '-n', '3', '--json'],
    ['messages', '--no-progress'],
    ['messages', '--repaired', '--json', '--no-progress'],
    ['export', '--format', 'md', '--no-progress'],
    ['export', '--format', 'html', '--no-progress'],
  ]
  for (const argv of SAME) {
    it(`${argv.join(' ')}`, async () => {
      const out = await onEach(argv)
      expect(out.plain.code).toBe(0)
      expect(out.plain.stdout).not.toBe('')
      expect(out.zstd).toEqual(out.plain)
      expect(out.v0).toEqual(out.plain)
    })
  }

  it('inspect --json: the same document apart from the file facts, which name each variant`s own log as current', async () => {
    const documents = {} as Record<Variant, Record<string, unknown>>
    for (const variant of VARIANTS) {
      const run = await cli(['inspect', join(roots[variant], ID), '--json', '--no-progress'])
      expect(run.code).toBe(0)
      documents[variant] = JSON.parse(run.stdout) as Record<string, unknown>
    }
    const facts = (variant: Variant): unknown => ({
      files: documents[variant]['files'],
      generation: documents[variant]['generation'],
    })
    expect(facts('zstd')).toEqual({
      files: [
        {
          name: LOG_NAME.zstd,
          kind: 'log',
          bytes: expect.any(Number),
          current: true,
          version: 4,
          encoding: 'zstd',
        },
      ],
      generation: { file: LOG_NAME.zstd, version: 4, encoding: 'zstd' },
    })
    expect(facts('plain')).toEqual({
      files: [
        {
          name: LOG_NAME.plain,
          kind: 'log',
          bytes: expect.any(Number),
          current: true,
          version: 4,
          encoding: 'plain',
        },
      ],
      generation: { file: LOG_NAME.plain, version: 4, encoding: 'plain' },
    })
    expect(facts('v0')).toEqual({
      files: [
        {
          name: LOG_NAME.v0,
          kind: 'log',
          bytes: expect.any(Number),
          current: true,
          version: 0,
          encoding: 'plain',
        },
      ],
      generation: { file: LOG_NAME.v0, version: 0, encoding: 'plain' },
    })
    const rest = (variant: Variant): string =>
      normalize(
        JSON.stringify({ ...documents[variant], files: null, generation: null, directory: null }),
        roots[variant],
      )
    expect(rest('zstd')).toBe(rest('plain'))
    expect(rest('v0')).toBe(rest('plain'))
  })

  it('verify names the file it read; a v0 session reports the seqs every read gives it (its migrated events, 0..20)', async () => {
    const out = await onEach(['verify', '--no-progress'])
    expect(out.plain).toEqual({
      code: 0,
      stdout: 'ok: <root>/s1/<log>: 21 events, last seq 20, <size>\n',
      stderr: '',
    })
    expect(out.zstd).toEqual(out.plain)
    // The core verifies the migrated events (seq 0..20, as cat and tail show them), not the
    // v0 file's own numbering (where the header line was event 0 and the last seq 21).
    expect(out.v0).toEqual(out.plain)
    for (const variant of VARIANTS) {
      const run = await cli(['verify', join(roots[variant], ID), '--no-progress'])
      expect(run.stdout).toContain(`${join(roots[variant], ID, LOG_NAME[variant])}:`)
    }
  })

  it('verify --json names the same file as the text', async () => {
    for (const variant of VARIANTS) {
      const run = await cli(['verify', join(roots[variant], ID), '--json', '--no-progress'])
      expect(run.code).toBe(0)
      expect((JSON.parse(run.stdout) as { file: string }).file).toBe(
        join(roots[variant], ID, LOG_NAME[variant]),
      )
    }
  })

  it('list: the same listing apart from sizes and modification times', async () => {
    const out = await onEach(['list'])
    const strip = (text: string): string => text.replace(/modified \S+/g, 'modified <time>')
    expect(out.plain.code).toBe(0)
    expect(strip(out.plain.stdout)).toBe(
      's1  created 2025-03-14T09:26:53.000Z  <size>  modified <time>\n1 session\n',
    )
    expect(strip(out.zstd.stdout)).toBe(strip(out.plain.stdout))
    expect(strip(out.v0.stdout)).toBe(strip(out.plain.stdout))
  })

  it('a v0 session gets one note saying it is read through an in-memory migration; the others none', async () => {
    for (const variant of VARIANTS) {
      const run = await cli(['cat', join(roots[variant], ID)])
      expect(run.stderr).toBe(
        variant === 'v0'
          ? 'agent-ledger: note: s1 holds session.jsonl (format v0): it is read through an in-memory migration; run agent-ledger migrate on it to write the current generation\n'
          : '',
      )
    }
  })
})

describe('every writing command works the same on a plain, a compressed and a migrated v0 session', () => {
  /** Fresh roots: these commands write. */
  async function freshRoots(): Promise<Record<Variant, string>> {
    const fresh = {} as Record<Variant, string>
    for (const variant of VARIANTS) fresh[variant] = await makeRoot(variant)
    return fresh
  }

  it('fork --at 9: the same new session, whose events equal the parent`s prefix', async () => {
    const fresh = await freshRoots()
    const out = await onEach(['fork', '--at', '9', '--id', 's1-fork'], fresh)
    expect(out.plain).toEqual({
      code: 0,
      stdout: 'forked s1 at seq 9 into s1-fork (<root>/s1-fork): 12 events\n',
      stderr: '',
    })
    expect(out.zstd).toEqual(out.plain)
    expect(out.v0).toEqual(out.plain)
    for (const variant of VARIANTS) {
      const forked = await cli(['cat', join(fresh[variant], 's1-fork'), '--json', '--to', '9'])
      const parent = await cli(['cat', join(fresh[variant], ID), '--json', '--to', '9'])
      expect(forked.stdout).toBe(parent.stdout)
    }
  })

  it('compact: the same four events appended; the v0 session is first migrated by the write open', async () => {
    const fresh = await freshRoots()
    const out = await onEach(
      ['compact', '--from', '2', '--to', '9', '--summary', 'Turn 1 read main.ts.', '--id', 'c1'],
      fresh,
    )
    expect(out.plain).toEqual({
      code: 0,
      stdout:
        'compacted s1: 6 message(s) #2..#9 replaced by the summary #23 (compaction c1, events #21..#24)\n',
      stderr: '',
    })
    expect(out.zstd).toEqual(out.plain)
    expect(out.v0).toEqual(out.plain)
    const after = await onEach(['messages', '--no-progress'], fresh)
    expect(after.zstd).toEqual(after.plain)
    expect(after.v0).toEqual(after.plain)
    expect(after.plain.stdout).toContain('Turn 1 read main.ts.')
  })

  it('salvage: the same report (the offset is where the source file ends: a file fact)', async () => {
    const fresh = await freshRoots()
    const out = await onEach(['salvage', '--to', 's1-copy'], fresh)
    expect(out.plain).toEqual({
      code: 0,
      stdout:
        'salvaged s1 into s1-copy (<root>/s1-copy/<log>): 21 events kept (seq 0..20), 0 bytes dropped from offset <n> (none); session/salvage is #21\n',
      stderr: '',
    })
    expect(out.zstd).toEqual(out.plain)
    expect(out.v0).toEqual(out.plain)
  })

  it('migrate and compress do what each generation needs, and every read agrees afterwards', async () => {
    const fresh = await freshRoots()
    const migrate = await onEach(['migrate', '--no-progress'], fresh)
    expect(migrate.plain.stdout).toMatch(/^nothing to migrate in s1: .*outcome=up-to-date/)
    expect(migrate.zstd.stdout).toMatch(/^nothing to migrate in s1: .*outcome=up-to-date/)
    expect(migrate.v0.stdout).toMatch(/^migrated s1: .*outcome=migrated .*to=s1\/<log>/)
    rmSync(join(fresh.v0, ID, 'session.jsonl'))
    const compress = await onEach(['compress', '--no-progress'], fresh)
    expect(compress.plain.stdout).toMatch(
      /^compressed s1: <size> -> <size> \([0-9.]+ times smaller, [0-9]+ frames?\) into s1\/<log>; removed s1\/<log>$/m,
    )
    expect(compress.v0.stdout).toMatch(
      /^compressed s1: <size> -> <size> \([0-9.]+ times smaller, [0-9]+ frames?\) into s1\/<log>; removed s1\/<log>$/m,
    )
    expect(compress.zstd.code).toBe(0)
    for (const variant of VARIANTS) expect(readdirSync(join(fresh[variant], ID))).toEqual([LOG_NAME.zstd])
    const cat = await onEach(['cat', '--json'], fresh)
    expect(cat.zstd).toEqual(cat.plain)
    expect(cat.v0).toEqual(cat.plain)
  })
})

describe('tail -f follows each variant, across the migration a write open does', () => {
  for (const variant of VARIANTS) {
    it(`${variant}: prints the last event, then the appended ones, and exits 0 when stopped`, async () => {
      const root = await makeRoot(variant)
      let stdout = ''
      let stderr = ''
      const controller = new AbortController()
      const done = runCli(['tail', '-f', '-n', '1', '--interval', '20', '--json', join(root, ID)], {
        stdout: (text) => {
          stdout += text
        },
        stderr: (text) => {
          stderr += text
        },
        signal: controller.signal,
      })
      const seqs = (): number[] =>
        stdout
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => (JSON.parse(line) as { seq: number }).seq)
      const until = async (what: string, count: number): Promise<void> => {
        await waitUntil(what, () => seqs().length >= count, { detail: () => `${stdout} ${stderr}` })
      }
      await until('the last event', 1)
      const store = createJsonlStore({ root })
      const writer = await store.openWriter(ID)
      writer.append({ type: 'turn/start', data: { turn: 3 } })
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'One more.' } } })
      await writer.close()
      await until('the appended events', 3)
      controller.abort()
      expect(await done).toBe(0)
      expect(seqs()).toEqual([20, 21, 22])
      if (variant === 'v0') expect(existsSync(join(root, ID, 'session.v4.jsonl'))).toBe(true)
    })
  }
})

describe('issue 11: the seven CLI symptoms after a session is compressed', () => {
  const dir = (): string => join(roots.zstd, ID)
  const zstdFile = (): string => join(roots.zstd, ID, LOG_NAME.zstd)

  it('1. tail -n 2 exits 0 with the last two events (it exited 2: IO_ERROR ... session.v4.jsonl (ENOENT))', async () => {
    const run = await cli(['tail', '-n', '2', dir()])
    expect(run).toEqual({
      code: 0,
      stdout:
        '#19 2025-03-14T09:27:10.000Z assistant/message "Done: `--verbose` now prints `store: <path>` first. I ran it once to check."\n#20 2025-03-14T09:27:10.850Z turn/end turn 2 completed\n',
      stderr: '',
    })
  })

  it('2. export --format md shows the header (it said "header: none (a crash during creation?)")', async () => {
    const run = await cli(['export', dir(), '--format', 'md', '--no-progress'])
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain('header: none')
    expect(run.stdout).toContain('- format: `agent-ledger.session v4`\n- created: `2025-03-14T09:26:53.000Z`')
  })

  it('3. export --format html shows the header (it said "header: none (a crash during creation?)")', async () => {
    const run = await cli(['export', dir(), '--format', 'html', '--no-progress'])
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain('none (a crash during creation?)')
    expect(run.stdout).toContain('2025-03-14T09:26:53.000Z')
    expect(run.stdout).toContain('/home/dev/projects/todo-cli')
  })

  it('4. export names the log that exists, the .zstd file (it named a .jsonl file that does not exist)', async () => {
    // Named relative to the store root (an export carries no machine path).
    const relativeZstd = `${ID}/${LOG_NAME.zstd}`
    const markdown = await cli(['export', dir(), '--format', 'md', '--no-progress'])
    expect(markdown.stdout).toContain(`- log: \`${relativeZstd}\``)
    expect(markdown.stdout).not.toContain(zstdFile())
    const html = await cli(['export', dir(), '--format', 'html', '--no-progress'])
    expect(html.stdout).toContain(relativeZstd)
    expect(html.stdout).not.toContain(`${join(dir(), LOG_NAME.plain)}<`)
    expect(existsSync(zstdFile())).toBe(true)
  })

  it('5. verify names the .zstd file in its text, as its --json does (it named session.v4.jsonl)', async () => {
    const text = await cli(['verify', dir(), '--no-progress'])
    const json = await cli(['verify', dir(), '--json', '--no-progress'])
    expect(text.stdout).toMatch(
      new RegExp(`^ok: ${zstdFile().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: 21 events`),
    )
    expect((JSON.parse(json.stdout) as { file: string }).file).toBe(zstdFile())
  })

  it('6. verify <dir>/session.v4.jsonl.zstd prints no "not the current log" note', async () => {
    const run = await cli(['verify', zstdFile(), '--no-progress'])
    expect(run.code).toBe(0)
    expect(run.stderr).toBe('')
    // A log that is not the current one still gets the note.
    const both = await makeRoot('v0')
    const store = createJsonlStore({ root: both })
    await store.backend.capabilities.migrate.migrate(ID)
    await store.close()
    const older = await cli(['verify', join(both, ID, 'session.jsonl'), '--no-progress'])
    expect(older.stderr).toBe(
      'agent-ledger: note: session.jsonl is not the current log of s1; reading session.v4.jsonl\n',
    )
  })

  it('7. inspect --json marks the only log current, with its generation (it said current false, generation null)', async () => {
    const run = await cli(['inspect', dir(), '--json', '--no-progress'])
    const document = JSON.parse(run.stdout) as { files: { current: boolean }[]; generation: unknown }
    expect(document.files).toEqual([expect.objectContaining({ name: LOG_NAME.zstd, current: true })])
    expect(document.generation).toEqual({ file: LOG_NAME.zstd, version: 4, encoding: 'zstd' })
  })
})
