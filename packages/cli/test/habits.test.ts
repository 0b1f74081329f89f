/**
 * CLI habits (issue 22 item 7), in-process: -v, did-you-mean, the wording of the slips found
 * (an id called a path, a dash value, --from past the end, "1 errors", ungrouped digits, the
 * export help), progress redrawn in place on a terminal, and "-" refused where it cannot work.
 */
import { join } from 'node:path'
import { Readable } from 'node:stream'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { statusLineIo } from '../src/io.ts'
import type { CliIo } from '../src/io.ts'
import { Progress } from '../src/progress.ts'
import { editDistance, nearest } from '../src/suggest.ts'
import { cli, makeRoot, testStore, writeSession } from './support/sessions.ts'

let root: string
let cleanup: () => void
beforeEach(async () => {
  ;({ root, cleanup } = makeRoot('al-habits-'))
  await writeSession(testStore(root), 'a1', { turns: 2 })
})
afterEach(() => cleanup())

describe('version and misspelt commands', () => {
  it('-v prints the version, like --version', async () => {
    const short = await cli(['-v'])
    const long = await cli(['--version'])
    expect(short.code).toBe(0)
    expect(short.stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/)
    expect(short.stdout).toBe(long.stdout)
  })

  it('a misspelt command suggests the nearest one, exit 2 like every usage error', async () => {
    const run = await cli(['verfy', join(root, 'a1')])
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      'agent-ledger: USAGE: unknown command "verfy"; did you mean "verify"? (run agent-ledger --help for all commands)\n',
    )
    // A swap of two neighbours is one edit (Damerau), so "mesasges" is near "messages".
    expect((await cli(['mesasges'])).stderr).toContain('did you mean "messages"?')
    expect((await cli(['imprt'])).stderr).toContain('did you mean "import"?')
  })

  it('a word near no command lists them all instead', async () => {
    const run = await cli(['frobnicate'])
    expect(run.code).toBe(2)
    expect(run.stderr).not.toContain('did you mean')
    expect(run.stderr).toContain('expected one of verify, inspect, cat,')
  })

  it('edit distance counts insertions, deletions, substitutions and adjacent swaps', () => {
    expect(editDistance('verfy', 'verify')).toBe(1)
    expect(editDistance('verfiy', 'verify')).toBe(1)
    expect(editDistance('stsat', 'stats')).toBe(2)
    expect(editDistance('', 'cat')).toBe(3)
    expect(nearest('x', ['cat', 'db'])).toBeUndefined()
    expect(nearest('ct', ['cat', 'db'])).toBe('cat')
  })
})

describe('wording', () => {
  it('verify <id> --store DIR names the id as a session id in that store, not a path', async () => {
    const run = await cli(['verify', 'nosuch', '--store', '.'], { cwd: root })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^agent-ledger: NOT_A_SESSION: session id "nosuch" not found in store \.: /)
    expect(run.stderr).not.toContain('does not exist')
  })

  it('tail -n -3 says what was given and what is expected', async () => {
    const run = await cli(['tail', '-n', '-3', join(root, 'a1')])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('expected --lines to be a non-negative integer, found "-3"')
    expect(run.stderr).not.toContain('found none')
    // A value that is one of the command's options stays "no value given".
    const option = await cli(['tail', '-n', '--json', join(root, 'a1')])
    expect(option.stderr).toContain('expected a value after -n, found the option --json')
  })

  it('cat --from past the end says how many events there are, exit 1', async () => {
    const all = await cli(['cat', join(root, 'a1'), '--json'])
    const events = all.stdout.trim().split('\n').length
    const run = await cli(['cat', join(root, 'a1'), '--from', '100'], { cwd: root })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(
      `agent-ledger: PAST_END: session ${join(root, 'a1')} has ${events} events; --from 100 is past the end (the last seq is ${events - 1})\n`,
    )
    // The last event itself is no error.
    const last = await cli(['cat', join(root, 'a1'), '--from', String(events - 1)])
    expect(last.code).toBe(0)
    expect(last.stdout.split('\n')).toHaveLength(2)
  })

  it('stats pluralises and groups digits for people, and --json keeps raw numbers', async () => {
    await writeSession(testStore(root), 'big', { turns: 300 })
    const run = await cli(['stats', join(root, 'big')])
    expect(run.code).toBe(0)
    const events = Number(
      /"events":(\d+)/.exec((await cli(['stats', join(root, 'big'), '--json'])).stdout)![1],
    )
    expect(events).toBeGreaterThan(999)
    expect(run.stdout).toContain(`session big: ${events.toLocaleString('en-US')} events over`)
    expect(run.stdout).toMatch(/: \d{1,3},\d{3} events over/)
    const small = await cli(['stats', join(root, 'a1')])
    expect(small.stdout).toMatch(/tool calls: 2, 0 errors\n/)
    expect(small.stdout).toMatch(/read_file: 2 calls, 0 errors/)
  })

  it('stats says "1 error", not "1 errors"', async () => {
    const synthetic = join(
      import.meta.dirname,
      '..',
      '..',
      'import',
      'test',
      'fixtures',
      'codex',
      'compacted.jsonl',
    )
    expect((await cli(['import', synthetic, '--root', root])).code).toBe(0)
    const run = await cli(['stats', join(root, 'codex-019c9000-aaaa-7bbb-8ccc-000000000001')])
    expect(run.stdout).toContain('  tool calls: 2, 1 error\n')
    expect(run.stdout).toContain('    shell: 2 calls, 1 error (50%)\n')
    expect(run.stdout).not.toMatch(/\b1 errors\b/)
  })

  it('export --help lists every format the command accepts; each option line says its own thing', async () => {
    const help = (await cli(['export', '--help'])).stdout
    for (const format of ['md', 'html', 'openai', 'anthropic']) {
      const run = await cli(['export', join(root, 'a1'), '--format', format])
      expect(run.code, `${format}: ${run.stderr}`).toBe(0)
      expect(help).toMatch(new RegExp(`^  ${format} +\\S`, 'm'))
    }
    expect((await cli(['export', join(root, 'a1'), '--format', 'pdf'])).code).toBe(2)
    const options = help.slice(help.indexOf('Options:'))
    const force = options.slice(options.indexOf('  --force'), options.indexOf('  --no-pager'))
    expect(force).not.toContain('- is stdout')
    expect(force).not.toContain('0600')
    const output = options.slice(options.indexOf('  -o, --output'), options.indexOf('  --force'))
    expect(output).toContain('(- is stdout)')
    expect(output).toContain('0600')
  })
})

describe('progress on a terminal', () => {
  function fakeIo(columns: number | undefined): { io: CliIo; stderr: () => string; tick: () => void } {
    let stderr = ''
    let now = 0
    const io: CliIo = {
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text
      },
      now: () => now,
      ...(columns === undefined ? {} : { stderrColumns: columns }),
    }
    return { io, stderr: () => stderr, tick: () => (now += 1000) }
  }

  it('redraws one line in place (\\r, clear to end of line) and ends it with one newline before other output', () => {
    const { io, stderr, tick } = fakeIo(80)
    const status = statusLineIo(io)
    const progress = new Progress(status, { label: 'verify', unit: 'events', total: 200, enabled: true })
    for (const done of [20, 100, 200]) {
      tick()
      progress.update(done)
    }
    status.stderr('agent-ledger: warning: done\n')
    status.endStatus()
    expect(stderr()).toBe(
      '\rverify: 10% (20 events / 200 events)\u001b[K' +
        '\rverify: 50% (100 events / 200 events)\u001b[K' +
        '\rverify: 100% (200 events / 200 events)\u001b[K' +
        '\nagent-ledger: warning: done\n',
    )
  })

  it('cuts the line one column short of the width, so it never wraps', () => {
    const { io, stderr, tick } = fakeIo(12)
    const status = statusLineIo(io)
    const progress = new Progress(status, { label: 'verify', unit: 'events', total: null, enabled: true })
    tick()
    progress.update(5)
    status.endStatus()
    status.endStatus()
    expect(stderr()).toBe('\rverify: 5 e\u001b[K\n')
  })

  it('off a terminal, each update stays one line of its own', () => {
    const { io, stderr, tick } = fakeIo(undefined)
    const status = statusLineIo(io)
    const progress = new Progress(status, { label: 'verify', unit: 'events', total: 200, enabled: true })
    tick()
    progress.update(20)
    tick()
    progress.update(100)
    status.endStatus()
    expect(stderr()).toBe('verify: 10% (20 events / 200 events)\nverify: 50% (100 events / 200 events)\n')
  })
})

describe('"-" as the session', () => {
  it('a command that writes refuses "-" with STDIN_REFUSED (exit 2) before reading anything', async () => {
    let read = false
    const stdin = Readable.from(
      (function* () {
        read = true
        yield Buffer.from('{}\n')
      })(),
    )
    const run = await cli(['fork', '-', '--at', '1'], { stdin })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^agent-ledger: STDIN_REFUSED: fork: expected a session directory, found "-"/)
    expect(run.stderr).toContain('"-" is read by verify, inspect, cat, messages, export, stats')
    expect(read).toBe(false)
  })

  it('input that is no log is NOT_A_SESSION naming standard input', async () => {
    const run = await cli(['cat', '-'], { stdin: Readable.from([Buffer.from('hello\n')]) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('NOT_A_SESSION: standard input ("-") is not a session log')
  })
})
