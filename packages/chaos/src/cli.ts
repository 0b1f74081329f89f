/**
 * `pnpm chaos`: the full chaos run. Every agent-ledger adapter on every store, then the
 * frameworks' own storage, through the same seeded faults; prints one markdown table.
 *
 *   pnpm chaos [--runs 10000] [--seed 1] [--workers 4] [--per-worker 25] [--only jsonl|postgres|baselines]
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
import type { ChaosResult } from './driver.ts'
import type { Subject } from './plan.ts'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '1' },
    workers: { type: 'string', default: '4' },
    'per-worker': { type: 'string', default: '25' },
    only: { type: 'string' },
  },
})
const runs = Number(values.runs)
const seed = Number(values.seed)
const workers = Number(values.workers)
const sessionsPerWorker = Number(values['per-worker'])

const ledger: Subject[] = [
  { kind: 'ledger', adapter: 'ai-sdk', store: 'jsonl' },
  { kind: 'ledger', adapter: 'openai-agents', store: 'jsonl' },
  { kind: 'ledger', adapter: 'ai-sdk', store: 'postgres' },
  { kind: 'ledger', adapter: 'openai-agents', store: 'postgres' },
]
const baselines: Subject[] = [
  { kind: 'baseline', baseline: 'ai-sdk-recipe' },
  { kind: 'baseline', baseline: 'agents-memory' },
  { kind: 'baseline', baseline: 'agents-file' },
]
const subjects = [...ledger, ...baselines].filter((subject) => {
  if (values.only === undefined) return true
  if (values.only === 'baselines') return subject.kind === 'baseline'
  return subject.kind === 'ledger' && subject.store === values.only
})

let cluster: PgCluster | undefined
let pgUrl = process.env['AGENT_LEDGER_PG_URL'] ?? ''
const pgSkip = pgUrl === '' ? pgUnavailableReason() : undefined
const rows: string[] = []
const label = (subject: Subject): [string, string] =>
  subject.kind === 'ledger'
    ? [subject.store === 'jsonl' ? 'JSONL' : 'PostgreSQL', `@agent-ledger/${subject.adapter}`]
    : {
        'ai-sdk-recipe': ['messages JSON file, saved at the end of a response', 'AI SDK recipe'] as [
          string,
          string,
        ],
        'agents-memory': ['MemorySession', 'OpenAI Agents'] as [string, string],
        'agents-file': ['JSON-file session (examples)', 'OpenAI Agents'] as [string, string],
      }[subject.baseline]
const ms = (value: number): string => (Number.isNaN(value) ? 'n/a' : value.toFixed(1))

function row(subject: Subject, result: ChaosResult): string {
  const { counts } = result
  const samples = result.resumes.map((resume) => resume.ms)
  const sizes = result.resumes.map((resume) => resume.events)
  const faults = Object.values(result.faults).reduce((sum, count) => sum + count, 0)
  const refused = Object.entries(result.refusals)
    .map(([code, count]) => `${code} ${count}`)
    .join(', ')
  return `| ${label(subject).join(' | ')} | ${result.sessions} | ${faults} | ${counts.toolCallsStarted} | ${counts.duplicatedExecutions} | ${counts.forgottenActions} | ${counts.dishonestRepairs} | ${counts.ackedEventsLost} | ${counts.providerInvalidRequests} | ${ms(percentile(samples, 50))} / ${ms(percentile(samples, 99))} | ${sizes.length === 0 ? 'n/a' : `${percentile(sizes, 50)} / ${Math.max(...sizes)}`} | ${refused === '' ? '-' : refused} |`
}

try {
  for (const subject of subjects) {
    if (subject.kind === 'ledger' && subject.store === 'postgres') {
      if (pgSkip !== undefined) {
        rows.push(`| ${label(subject).join(' | ')} | skipped: ${pgSkip} |`)
        continue
      }
      if (pgUrl === '') {
        cluster = await startCluster()
        pgUrl = cluster.url()
      }
    }
    const started = performance.now()
    // Session ids unique to this subject and invocation on a shared server; the plans stay the seed's.
    const namespace = subject.kind === 'ledger' ? `${subject.adapter}-${randomUUID().slice(0, 8)}-` : ''
    const result = await runChaos({ subject, runs, seed, workers, sessionsPerWorker, pgUrl, namespace })
    rows.push(row(subject, result))
    console.error(
      `${label(subject).join(' / ')}: ${result.sessions} runs in ${((performance.now() - started) / 1000).toFixed(0)} s; faults ${JSON.stringify(result.faults)}; unfinished ${result.unfinished}; unfenced ${result.unfenced}${result.badRounds.length > 0 ? `; nonzero rounds ${result.badRounds.map((bad) => bad.round).join(',')} (seed ${seed})` : ''}${result.errors.length > 0 ? `; errors: ${result.errors.slice(0, 3).join(' | ')}` : ''}`,
    )
  }
} finally {
  await cluster?.destroy()
}
console.log(
  [
    `Seed ${seed}, ${workers} worker processes, ${sessionsPerWorker} sessions per worker per round.`,
    '',
    '| store | adapter | runs | faults | tool calls | duplicated executions | forgotten actions | dishonest repairs | acked events lost | provider-invalid next requests | resume p50 / p99 ms | events at resume p50 / max | stopped writers refused by |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows,
  ].join('\n'),
)
