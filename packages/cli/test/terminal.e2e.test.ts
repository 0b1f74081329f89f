/**
 * The built binary on a real pseudo-terminal (util-linux `script`) and a real pipe: long
 * output goes through the pager on a terminal only, `--no-pager` and a pipe print directly,
 * a pager that quits early ends the command quietly with exit 0, a missing pager falls back
 * to direct output, and `-` reads a session log from a child process's stdout.
 */
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { runBin } from './support/bin.ts'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
const hasZstd = (() => {
  try {
    execFileSync('zstd', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

let root: string

/** Writes session `id` through the built store: `turns` turns of four events each. */
async function writeTurns(id: string, turns: number): Promise<void> {
  const store = createJsonlStore({ root })
  const writer = await store.create({ id, header: { cwd: '/srv/demo' } })
  for (let turn = 1; turn <= turns; turn++) {
    writer.append({ type: 'turn/start', data: { turn } })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: `Question ${turn}?` } } })
    writer.append({
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: `Answer ${turn}.` } },
    })
    writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
  }
  await writer.close()
}

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'al-terminal-'))
  await writeTurns('a1', 3)
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`

/** Runs the binary with stdout and stderr on a new pseudo-terminal; resolves with what the terminal showed. */
function onTerminal(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<{ code: number | null; shown: string }> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ')
  return new Promise((resolve, reject) => {
    const inherited = { ...process.env }
    delete inherited['AGENT_LEDGER_PAGER']
    delete inherited['PAGER']
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...inherited, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let shown = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => (shown += text))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, shown }))
  })
}

/** A pager that writes what it receives to `file` (`lines`: only that many lines, then it quits). */
function recordingPager(file: string, lines?: number): string {
  const script = join(root, lines === undefined ? 'pager.sh' : 'quitting-pager.sh')
  const body = lines === undefined ? `cat > ${shellQuote(file)}` : `head -n ${lines} > ${shellQuote(file)}`
  writeFileSync(script, `#!/bin/sh\n${body}\n`)
  chmodSync(script, 0o755)
  return script
}

describe.skipIf(!hasScript)('the pager, on a real terminal', () => {
  it('cat and messages go through $PAGER; AGENT_LEDGER_PAGER wins over PAGER', async () => {
    const paged = join(root, 'paged.txt')
    const expected = (await runBin(['cat', join(root, 'a1')])).stdout
    const cat = await onTerminal(['cat', join(root, 'a1')], { PAGER: recordingPager(paged) })
    expect(cat.code).toBe(0)
    expect(readFileSync(paged, 'utf8')).toBe(expected)
    expect(cat.shown).not.toContain('#0 ')

    rmSync(paged)
    const other = join(root, 'other.txt')
    const messages = await onTerminal(['messages', join(root, 'a1')], {
      AGENT_LEDGER_PAGER: recordingPager(paged),
      PAGER: `sh -c 'cat > ${other}'`,
    })
    expect(messages.code).toBe(0)
    expect(readFileSync(paged, 'utf8')).toContain('Answer 3.')
    expect(existsSync(other)).toBe(false)
  })

  it('--no-pager prints on the terminal directly; the pager never starts', async () => {
    const paged = join(root, 'paged.txt')
    const run = await onTerminal(['cat', join(root, 'a1'), '--no-pager'], { PAGER: recordingPager(paged) })
    expect(run.code).toBe(0)
    expect(run.shown).toContain('user/message "Question 3?"')
    expect(existsSync(paged)).toBe(false)
  })

  it('stdout piped (not a terminal) prints directly even with PAGER set', () => {
    const paged = join(root, 'paged.txt')
    const pager = recordingPager(paged)
    const output = execFileSync(process.execPath, [BIN, 'cat', join(root, 'a1')], {
      env: { ...process.env, PAGER: pager },
      encoding: 'utf8',
    })
    expect(output).toContain('user/message "Question 3?"')
    expect(existsSync(paged)).toBe(false)
  })

  it('a pager that quits early (EPIPE on a long output) ends the command quietly, exit 0', async () => {
    // 12,000 events, some 700 kB of lines: far more than a pipe holds, so writes hit EPIPE.
    await writeTurns('big', 3000)
    const paged = join(root, 'paged.txt')
    const run = await onTerminal(['cat', join(root, 'big')], { PAGER: recordingPager(paged, 2) })
    expect(run.code).toBe(0)
    expect(readFileSync(paged, 'utf8').split('\n')).toHaveLength(3)
    expect(run.shown).toBe('')
  })

  it('a pager whose program is missing falls back to direct output, with a warning', async () => {
    const run = await onTerminal(['cat', join(root, 'a1')], { PAGER: join(root, 'no-such-pager') })
    expect(run.code).toBe(0)
    expect(run.shown).toContain('pager')
    expect(run.shown).toContain('not found')
    expect(run.shown).toContain('user/message "Question 3?"')
  })
})

describe('"-": a session log from standard input', () => {
  /** Runs `producer | agent-ledger ...args` with a real pipe between two child processes. */
  function piped(
    producer: readonly [string, ...string[]],
    args: readonly string[],
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const source = spawn(producer[0], producer.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
      const cli = spawn(process.execPath, [BIN, ...args], { stdio: [source.stdout, 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      cli.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text))
      cli.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text))
      cli.on('error', reject)
      cli.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  }

  it('cat - prints the same events as cat <dir>', async () => {
    const direct = await runBin(['cat', join(root, 'a1'), '--json'])
    const run = await piped(['cat', join(root, 'a1', 'session.v4.jsonl')], ['cat', '-', '--json'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(direct.stdout)
  })

  it('verify, messages, stats, export and inspect read "-" too; the private copy is removed afterwards', async () => {
    const log = join(root, 'a1', 'session.v4.jsonl')
    for (const [args, shows] of [
      [['verify', '-'], /^ok: .*a1\/session\.v4\.jsonl: 12 events/],
      [['messages', '-'], /Answer 3\./],
      [['stats', '-'], /^session a1: 12 events/],
      [['export', '-', '--format', 'md'], /Question 2\?/],
      [['inspect', '-'], /a1/],
    ] as const) {
      const run = await piped(['cat', log], args)
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0)
      expect(run.stdout).toMatch(shows)
      // The private copy of stdin (named in verify's report) is removed when the command ends.
      const copy = /^ok: (\S+)\/a1\/session\.v4\.jsonl:/.exec(run.stdout)?.[1]
      if (args[0] === 'verify') {
        expect(copy).toBeDefined()
        expect(existsSync(copy!)).toBe(false)
      }
    }
  })

  it.skipIf(!hasZstd)(
    'zstd -dc x.zstd | agent-ledger cat -, and zstd-compressed stdin as it is',
    async () => {
      const compressed = join(root, 'a1.zstd')
      execFileSync('zstd', ['-q', join(root, 'a1', 'session.v4.jsonl'), '-o', compressed])
      const direct = await runBin(['cat', join(root, 'a1')])
      const decompressed = await piped(['zstd', '-dc', compressed], ['cat', '-'])
      expect(decompressed.code).toBe(0)
      expect(decompressed.stdout).toBe(direct.stdout)
      const raw = await piped(['cat', compressed], ['cat', '-'])
      expect(raw.stderr).toBe('')
      expect(raw.stdout).toBe(direct.stdout)
    },
  )

  it('a command that writes refuses "-" (STDIN_REFUSED, exit 2)', async () => {
    const run = await piped(
      ['cat', join(root, 'a1', 'session.v4.jsonl')],
      ['compact', '-', '--from', '1', '--to', '2', '--summary', 's'],
    )
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/STDIN_REFUSED: compact: expected a session directory, found "-"/)
  })
})
