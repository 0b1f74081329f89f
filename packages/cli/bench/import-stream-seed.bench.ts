/**
 * Peak memory of a streamed create, run by `pnpm bench` (`--only import-stream` runs it with
 * the import bench): an import whose sessions are published as streamed seeds (a large main
 * session AND a large fork), and `agent-ledger copy` of the large session (streamed into the
 * target's create).
 *
 * A Claude Code–shaped transcript (the test suite's synthetic generator) of
 * `AGENT_LEDGER_IMPORT_BENCH_MB` MB (default 32; `--large`: 256) is written with a branch
 * from its middle (a second leaf: one session inherits half of the other's turns, so the
 * import has a fork as large as half the source). Each measure runs in a child process:
 *
 * 1. `agent-ledger import <file> --root <tmp>`: peak RSS above the RSS before it started,
 *    beside a bare read + line split + `JSON.parse` of the same file (the floor);
 * 2. `agent-ledger copy <root> <root2> --session <main>`: peak RSS the same way, beside a bare
 *    read + split + parse of the session's log (its floor).
 *
 * Memory, not speed, is the claim here (the import bench has the speed figures).
 */
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { splitLines } from '@agent-ledger/import'

import { benchChild, textChunks } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { runCli } from '../src/index.ts'
import { transcriptLines, uuidOf } from '../test/support/claude-transcript.ts'

const CHILD_ENV = 'AGENT_LEDGER_SEED_STREAM_BENCH_CHILD'
const TURNS_PER_CHUNK = 200

/**
 * Writes a transcript of about `megabytes` MB: turns chained from the first, then a branch
 * of as many turns again from the middle turn (a second leaf of the `parentUuid` tree).
 *
 * @returns The number of records.
 */
function writeTranscript(file: string, megabytes: number): number {
  const fd = openSync(file, 'w', 0o600)
  const target = (megabytes * 1024 * 1024) / 2
  let written = 0
  let records = 0
  let turn = 1
  const put = (lines: readonly string[]): void => {
    const text = `${lines.join('\n')}\n`
    writeSync(fd, text)
    written += Buffer.byteLength(text)
    records += lines.length
  }
  while (written < target) {
    put(transcriptLines({ turns: TURNS_PER_CHUNK, from: turn, outputBytes: 4000 }))
    turn += TURNS_PER_CHUNK
  }
  const middle = Math.floor(turn / 2)
  // The branch: turns numbered after the trunk's (unique uuids), its first record re-parented
  // onto the middle turn's last record.
  let from = turn + 1000
  let first = true
  const branchTarget = written * 2
  while (written < branchTarget) {
    const lines = transcriptLines({ turns: TURNS_PER_CHUNK, from, outputBytes: 4000 })
    if (first) {
      const head = JSON.parse(lines[0]!) as Record<string, unknown>
      head['parentUuid'] = uuidOf(middle, 6)
      lines[0] = JSON.stringify(head)
      first = false
    }
    put(lines)
    from += TURNS_PER_CHUNK
  }
  closeSync(fd)
  return records
}

/**
 * One child job: `agent-ledger <args>` through `runCli` (returns its stdout), or the bare
 * read + split + `JSON.parse` of a file (returns its line count).
 */
async function childJob(job: { readonly cli: readonly string[] } | { readonly floor: string }): Promise<string> {
  if ('cli' in job) {
    let out = ''
    const code = await runCli([...job.cli], {
      stdout: (text) => (out += text),
      stderr: (text) => process.stderr.write(text),
    })
    if (code !== 0) throw new Error(`agent-ledger ${job.cli[0]} exited ${code}: ${out.slice(0, 2000)}`)
    return out
  }
  let lines = 0
  for await (const line of splitLines(textChunks(job.floor))) {
    // The empty line after the file's last newline is its terminator, not a line.
    if (typeof line !== 'string' || line === '') continue
    JSON.parse(line)
    lines += 1
  }
  return String(lines)
}

const runChild = benchChild(import.meta.url, { envName: CHILD_ENV, main: childJob })

type ChildResult = Awaited<ReturnType<typeof runChild>>

const mb = (bytes: number): number => bytes / (1024 * 1024)
const above = (result: ChildResult): number => mb(result.maxRssBytes - result.baselineRssBytes)

/**
 * The streamed-seed memory figures.
 *
 * @param options - `scale`: 'default' (32 MB, or `AGENT_LEDGER_IMPORT_BENCH_MB`) or 'large' (256 MB).
 */
export async function run(options: { scale?: 'default' | 'large' } = {}): Promise<BenchResult[]> {
  const fromEnv = Number(process.env['AGENT_LEDGER_IMPORT_BENCH_MB'])
  const megabytes = Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : options.scale === 'large' ? 256 : 32
  const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-bench-seed-stream-'))
  try {
    const file = join(scratch, 'transcript.jsonl')
    const records = writeTranscript(file, megabytes)
    const size = mb(statSync(file).size)
    const root = join(scratch, 'root')
    const floor = await runChild({ floor: file })
    const imported = await runChild({ cli: ['import', file, '--root', root, '--json', '--no-progress'] })
    const report = JSON.parse(imported.result) as {
      sources: { report: { events: number; forks: number }; sessions: { id: string; events: number }[] }[]
    }
    const source = report.sources[0]!
    if (source.report.forks < 1)
      throw new Error(`expected the generated transcript to import with a fork, found none`)
    const largest = [...source.sessions].sort((a, b) => b.events - a.events)[0]!
    const log = join(
      root,
      largest.id,
      readdirSync(join(root, largest.id)).find((name) => name.startsWith('session.'))!,
    )
    const logFloor = await runChild({ floor: log })
    const copied = await runChild({
      cli: ['copy', root, join(scratch, 'copy'), '--session', largest.id, '--json', '--no-progress'],
    })
    const sessions = source.sessions.map((session) => session.events).join(' + ')
    return [
      {
        name: `import with a fork, ${records} records (${size.toFixed(0)} MB; sessions of ${sessions} events, each one streamed seed): peak RSS above the start (child)`,
        value: above(imported),
        unit: 'MB',
        floor: { name: 'bare read + line split + JSON.parse, same measure (child)', value: above(floor) },
        ratio: above(imported) / Math.max(above(floor), 1),
      },
      {
        name: `copy of a ${largest.events}-event session (${mb(statSync(log).size).toFixed(0)} MB log), streamed into one create: peak RSS above the start (child)`,
        value: above(copied),
        unit: 'MB',
        floor: { name: 'bare read + split + parse of its log, same measure (child)', value: above(logFloor) },
        ratio: above(copied) / Math.max(above(logFloor), 1),
      },
    ]
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
