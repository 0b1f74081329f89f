/**
 * Resume of a 1 GB session on PostgreSQL (issue 28's target: resume p99 <= 50 ms for a 1 GB
 * session, with checkpoints), through the API a user calls, for each adapter (`resumeOnce` of
 * `resume.bench.ts`, as it measures them on JSONL: `openAiSdkSession` and `openAgentsSession`)
 * on `createSessionStore({ backend: openPostgresBackend(...) })`. Beside it, in the same run, the floor:
 * a bare `pg` client reading the stored checkpoint row (`ledger_checkpoints.body`: its header
 * line and payload `JSON.parse`d) and the event lines after its seq, each `JSON.parse`d.
 *
 * The session is the JSONL benches' ~1 GB agent session, copied once with `agent-ledger copy`
 * (every stored line as it is) into a PostgreSQL cluster cached under os.tmpdir()
 * (`cachedCluster`), then given a checkpoint at its head by one writer with checkpoints at every
 * flush. Building it takes minutes (the copy verifies every line on both sides); later runs
 * start the cached cluster in seconds. Without PostgreSQL's binaries the row says why.
 * Run alone with `pnpm bench --only resume-postgres`.
 *
 * Before the adapters resumed from the projection (main 16ba648, 2026-12-03 06:23-06:35 UTC,
 * `nice -n 19`, load average 12 to 57 beside five engineers): p99 58,054 ms, floor 17.3 ms
 * (the cache built in 272 s: copy and checkpoint). The JSONL row on the same commit: p99
 * 73,340 ms, floor 2.5 ms.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { SNAPSHOT_VERSION } from '@agent-ledger/session-projection'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import pg from 'pg'

import { ensureDataset } from '../../session-store-jsonl/bench/support/dataset.ts'
import { median } from '../../../tooling/bench/support.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'
import { cachedCluster, pgUnavailableReason } from '../../../tooling/pg/cluster.ts'
import { ADAPTERS, emptyTimes, record, resumeOnce, resumeRows } from './resume.bench.ts'

const MEGABYTES = 1024
const SAMPLES = 20
const EAGER = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const log = (message: string): void => void process.stderr.write(`resume-postgres bench: ${message}\n`)
const launcher = fileURLToPath(new URL('../../../tooling/launch.mjs', import.meta.url))
const cliEntry = fileURLToPath(new URL('../../cli/src/bin.ts', import.meta.url))

/** Runs `agent-ledger copy <from> <to> --session <id>`; rejects with its stderr on a nonzero exit. */
async function copySession(from: string, to: string, id: string): Promise<void> {
  const child = spawn(process.execPath, [launcher, cliEntry, 'copy', from, to, '--session', id, '--no-progress'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  if (code !== 0) throw new Error(`agent-ledger copy exited with ${String(code)}: ${stderr.trim()}`)
}

async function openStore(url: string, checkpoint?: typeof EAGER): Promise<SessionStore> {
  return createSessionStore({
    backend: await openPostgresBackend({ connectionString: url }),
    ...(checkpoint === undefined ? {} : { checkpoint }),
    clock: () => new Date().toISOString(),
  })
}

/** The floor: the checkpoint row and the lines after its seq, read and parsed by a bare client. */
async function checkpointFloor(client: pg.Client, id: string): Promise<number> {
  const started = performance.now()
  const checkpoint = await client.query<{ seq: string; body: Buffer }>(
    'SELECT seq::text AS seq, body FROM ledger_checkpoints WHERE session_id = $1',
    [id],
  )
  const row = checkpoint.rows[0]
  if (row === undefined) throw new Error(`session ${id} has no checkpoint row`)
  // The body is a JSON header line, `\n`, then the JSON payload (session-store's checkpoint-body.ts).
  const body = row.body.toString('utf8')
  const newline = body.indexOf('\n')
  JSON.parse(body.slice(0, newline))
  JSON.parse(body.slice(newline + 1))
  const tail = await client.query<{ line: string }>(
    'SELECT line FROM ledger_events WHERE session_id = $1 AND seq > $2 ORDER BY seq',
    [id, row.seq],
  )
  for (const { line } of tail.rows) JSON.parse(line)
  return performance.now() - started
}

export async function run(): Promise<BenchResult[]> {
  const unavailable = pgUnavailableReason()
  if (unavailable !== undefined) throw new Error(`not run: ${unavailable}`)
  const source = await ensureDataset(MEGABYTES, log)
  const { cluster } = await cachedCluster(
    // The snapshot version in the key, as in resume.bench.ts: a checkpoint of another layout is
    // ignored (a full replay), so each layout gets its own cluster.
    {
      kind: 'chaos-resume-postgres',
      megabytes: MEGABYTES,
      bytes: source.bytes,
      id: source.id,
      snapshotVersion: SNAPSHOT_VERSION,
    },
    async (fresh) => {
      log(`copying the ${MEGABYTES} MB session into PostgreSQL (agent-ledger copy; minutes)`)
      await copySession(source.root, fresh.url(), source.id)
      log('writing a checkpoint at its head')
      const store = await openStore(fresh.url(), EAGER)
      const writer = await store.openWriter(source.id)
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'Checkpoint here.' } } })
      await writer.close()
      await store.close()
      return {}
    },
  )
  const client = new pg.Client({ connectionString: cluster.url() })
  await client.connect()
  try {
    const times = emptyTimes()
    const floors: number[] = []
    let checkpointUsed = true
    for (let sample = 0; sample < SAMPLES; sample++) {
      floors.push(await checkpointFloor(client, source.id))
      for (const adapter of ADAPTERS) {
        const resumed = await resumeOnce(await openStore(cluster.url()), source.id, adapter)
        record(times, adapter, resumed)
        checkpointUsed &&= resumed.checkpointUsed
      }
    }
    if (!checkpointUsed) throw new Error('a resume did not start from the checkpoint')
    return resumeRows(times, 'PostgreSQL', {
      name: 'bare SELECT + JSON.parse of the checkpoint row and the tail',
      value: median(floors),
    })
  } finally {
    await client.end()
    await cluster.stop('fast')
  }
}
