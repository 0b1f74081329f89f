/**
 * `pnpm chaos`: the full chaos run. Every agent-ledger adapter on every store, then the
 * frameworks' own storage, through the same seeded faults; prints one markdown table.
 *
 *   pnpm chaos [--runs 10000 | --total N] [--seed 1] [--workers 4] [--per-worker 25]
 *              [--only jsonl,postgres,claude,disk-full,failover,baselines]
 *
 * `claude` is `@agent-ledger/claude-agent-sdk` on JSONL and PostgreSQL: the real SDK and its
 * CLI, offline, against the worker's scripted Messages API (`claude-worker.ts`).
 * `--runs` is per row; `--total` spreads N runs evenly over the rows run. The `disk-full` rows put
 * the JSONL store on a small tmpfs (root only: without the mount the row says so), the
 * `failover` rows run on a primary with a synchronous standby of their own.
 *
 * PostgreSQL: `AGENT_LEDGER_PG_URL`, else a throwaway server from tooling/pg (loopback, its own
 * temporary directory), stopped by its pid at the end; without server binaries its rows say why.
 */
import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'

import { pgUnavailableReason, startCluster } from '../../../tooling/pg/cluster.ts'
import type { PgCluster } from '../../../tooling/pg/cluster.ts'
import { percentile } from './checker.ts'
import { runChaos } from './driver.ts'
import { FailoverPair } from './failover.ts'
import type { ChaosResult } from './driver.ts'
import type { Adapter, Subject } from './plan.ts'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    total: { type: 'string' },
    seed: { type: 'string', default: '1' },
    workers: { type: 'string', default: '4' },
    'per-worker': { type: 'string', default: '25' },
    only: { type: 'string' },
  },
})
const seed = Number(values.seed)
const workers = Number(values.workers)
const sessionsPerWorker = Number(values['per-worker'])

/** One row of the table: a subject, and the store fault it runs under instead of the default mix. */
interface Row {
  readonly subject: Subject
  readonly group: 'jsonl' | 'postgres' | 'claude' | 'disk-full' | 'failover' | 'baselines'
}

const jsonl = (adapter: Adapter): Subject => ({ kind: 'ledger', adapter, store: 'jsonl' })
const postgres = (adapter: Adapter): Subject => ({ kind: 'ledger', adapter, store: 'postgres' })
const all: Row[] = [
  { subject: jsonl('ai-sdk'), group: 'jsonl' },
  { subject: jsonl('openai-agents'), group: 'jsonl' },
  { subject: postgres('ai-sdk'), group: 'postgres' },
  { subject: postgres('openai-agents'), group: 'postgres' },
  { subject: jsonl('claude-agent-sdk'), group: 'claude' },
  { subject: postgres('claude-agent-sdk'), group: 'claude' },
  { subject: jsonl('ai-sdk'), group: 'disk-full' },
  { subject: jsonl('openai-agents'), group: 'disk-full' },
  { subject: postgres('ai-sdk'), group: 'failover' },
  { subject: postgres('openai-agents'), group: 'failover' },
  { subject: { kind: 'baseline', baseline: 'ai-sdk-recipe' }, group: 'baselines' },
  { subject: { kind: 'baseline', baseline: 'agents-memory' }, group: 'baselines' },
  { subject: { kind: 'baseline', baseline: 'agents-file' }, group: 'baselines' },
]
const only = values.only?.split(',')
const rowsToRun = all.filter((row) => only === undefined || only.includes(row.group))
/** Runs of each row: `--runs` each, or `--total` spread evenly (the first rows take the remainder). */
const runsOf = (index: number): number => {
  if (values.total === undefined) return Number(values.runs)
  const total = Number(values.total)
  return Math.floor(total / rowsToRun.length) + (index < total % rowsToRun.length ? 1 : 0)
}

/** The tmpfs of a `disk-full` round (MiB): room for a round's sessions, small enough to fill at once. */
const TMPFS_MIB = 16

let cluster: PgCluster | undefined
let pgUrl = process.env['AGENT_LEDGER_PG_URL'] ?? ''
const pgSkip = pgUnavailableReason()
const rows = { push: (line: string): void => console.log(line) }
const label = (row: Row): [string, string] => {
  const { subject } = row
  if (subject.kind === 'ledger') {
    const store = subject.store === 'jsonl' ? 'JSONL' : 'PostgreSQL'
    const fault =
      row.group === 'disk-full'
        ? `, full disk (tmpfs ${TMPFS_MIB} MiB)`
        : row.group === 'failover'
          ? ', primary SIGKILLed, sync standby promoted'
          : ''
    return [`${store}${fault}`, `@agent-ledger/${subject.adapter}`]
  }
  return {
    'ai-sdk-recipe': ['messages JSON file, saved at the end of a response', 'AI SDK recipe'] as [
      string,
      string,
    ],
    'agents-memory': ['MemorySession', 'OpenAI Agents'] as [string, string],
    'agents-file': ['JSON-file session (examples)', 'OpenAI Agents'] as [string, string],
  }[subject.baseline]
}

const ms = (value: number): string => (Number.isNaN(value) ? 'n/a' : value.toFixed(1))

function tableRow(row: Row, result: ChaosResult): string {
  const { counts } = result
  const samples = result.resumes.map((resume) => resume.ms)
  const sizes = result.resumes.map((resume) => resume.events)
  const faults = Object.values(result.faults).reduce((sum, count) => sum + count, 0)
  const refused = Object.entries(result.refusals)
    .map(([code, count]) => `${code} ${count}`)
    .join(', ')
  return `| ${label(row).join(' | ')} | ${result.sessions} | ${faults} | ${counts.toolCallsStarted} | ${counts.duplicatedExecutions} | ${counts.forgottenActions} | ${counts.dishonestRepairs} | ${counts.ackedEventsLost} | ${counts.providerInvalidRequests} | ${ms(percentile(samples, 50))} / ${ms(percentile(samples, 99))} | ${sizes.length === 0 ? 'n/a' : `${percentile(sizes, 50)} / ${Math.max(...sizes)}`} | ${refused === '' ? '-' : refused} |`
}

// Rows are printed as each finishes: a run cut short keeps the rows it measured.
console.log(
  '| store | adapter | runs | faults | tool calls | duplicated executions | forgotten actions | dishonest repairs | acked events lost | provider-invalid next requests | resume p50 / p99 ms | events at resume p50 / max | stopped writers refused by |',
)
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
console.error(
  `Seed ${seed}, ${workers} worker processes, ${sessionsPerWorker} sessions per worker per round.`,
)
const pair = new FailoverPair()
try {
  for (const [index, row] of rowsToRun.entries()) {
    const { subject } = row
    const runs = runsOf(index)
    if (subject.kind === 'ledger' && subject.store === 'postgres') {
      if (pgSkip !== undefined && (pgUrl === '' || row.group === 'failover')) {
        rows.push(`| ${label(row).join(' | ')} | not run: ${pgSkip} |`)
        continue
      }
      if (pgUrl === '' && row.group !== 'failover') {
        cluster = await startCluster()
        pgUrl = cluster.url()
      }
    }
    const started = performance.now()
    // Session ids unique to this subject and invocation on a shared server; the plans stay the seed's.
    const namespace = subject.kind === 'ledger' ? `${subject.adapter}-${randomUUID().slice(0, 8)}-` : ''
    // A full disk or a failover hits the whole store: one worker at a time, so each fault is one.
    const storeFault = row.group === 'disk-full' || row.group === 'failover'
    let result: ChaosResult
    try {
      result = await runChaos({
        subject,
        runs,
        seed,
        workers: storeFault ? 1 : workers,
        sessionsPerWorker,
        pgUrl,
        namespace,
        ...(storeFault ? { kinds: [row.group], faultsPerSlot: row.group === 'failover' ? 1 : 2 } : {}),
        ...(row.group === 'disk-full' ? { tmpfsMiB: TMPFS_MIB } : {}),
        ...(row.group === 'failover'
          ? { failover: { prepare: () => pair.prepare(), fail: () => pair.fail() } }
          : {}),
      })
    } catch (error) {
      const reason = String(error instanceof Error ? error.message : error).replaceAll('|', '/')
      if (!reason.startsWith('mount refused')) throw error
      rows.push(`| ${label(row).join(' | ')} | not run: ${reason} |`)
      continue
    }
    rows.push(tableRow(row, result))
    console.error(
      `${label(row).join(' / ')}: ${result.sessions} runs in ${((performance.now() - started) / 1000).toFixed(0)} s; faults ${JSON.stringify(result.faults)}; unfinished ${result.unfinished}; unfenced ${result.unfenced}; refusals ${JSON.stringify(result.refusals)}${result.badRounds.length > 0 ? `; nonzero rounds ${result.badRounds.map((bad) => `${bad.round} ${JSON.stringify(bad.counts)} ${bad.invalid.join(' / ')}`).join(', ')} (seed ${seed})` : ''}${result.errors.length > 0 ? `; errors: ${result.errors.slice(0, 3).join(' | ')}` : ''}`,
    )
  }
} finally {
  await cluster?.destroy()
  await pair.destroy()
}
