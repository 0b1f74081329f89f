/**
 * `list()` benchmark through the one store API (issues 4 and 23): sessions/s of
 * `store.list({ limit: 1000 })` of `createJsonlStore({ root })` (the session core over the
 * JSONL backend; one page) over a root of 1,000 sessions (created through the same store,
 * cached between runs), beside the floor measured in the same run: readdir, then per session
 * open the log, read its first line, `JSON.parse` it and close, 16 sessions at a time. The
 * listing also orders the page (one `lstat` per session for the log's mtime), which the floor
 * does not. No target: the figure is reported with its ratio (ours / floor).
 *
 * Run alone with `pnpm bench --only list.bench`.
 */
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'

import { createJsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { cached, generateAgentSessionHeader } from './support/dataset.ts'
import { bareList } from './support/floors.ts'
import { interleave, progress, seconds, throughputFigure } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const SESSIONS = 1000
/** Headers the floor reads at a time. */
const CONCURRENCY = 16
const ROUNDS = 7
const log = progress('list')

/** The first events of a session: a system prompt, a turn start and a user message. */
function seedEvents(index: number, time: string): LoggedEvent[] {
  return [
    {
      seq: 0,
      time,
      type: 'system/message',
      data: {
        message: { role: 'system', content: 'You are a coding agent working in a TypeScript monorepo.' },
      },
      surfaceOp: 'append',
    },
    { seq: 1, time, type: 'turn/start', data: { turn: 1 } },
    {
      seq: 2,
      time,
      type: 'user/message',
      data: { message: { role: 'user', content: `Please fix failing test number ${index}.` } },
      surfaceOp: 'append',
    },
  ] as LoggedEvent[]
}

/** A root of {@link SESSIONS} sessions created through the store (cached). */
async function ensureRoot(): Promise<string> {
  const started = performance.now()
  const { directory, built } = await cached({ kind: 'list-root', sessions: SESSIONS, writer: 'core' }, async (building) => {
    const base = generateAgentSessionHeader()
    const store = createJsonlStore({ root: join(building, 'root'), clock: () => base.createdAt })
    for (let index = 0; index < SESSIONS; index += 1) {
      const writer = await store.create({
        id: `session-${String(index).padStart(4, '0')}`,
        header: {
          createdAt: base.createdAt,
          cwd: base.cwd,
          metadata: { ...base.metadata, title: `Session ${index}` },
        },
        seed: seedEvents(index, base.createdAt),
      })
      await writer.close()
    }
    await store.close()
    return { sessions: SESSIONS }
  })
  if (built) log(`created ${SESSIONS} sessions in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return join(directory, 'root')
}

/**
 * Runs the list figure.
 *
 * @param _options - `scale` (unused: 1,000 sessions at every scale).
 * @returns The figure.
 */
export async function run(_options: RunOptions = {}): Promise<BenchResult[]> {
  const root = await ensureRoot()
  const store = createJsonlStore({ root })
  try {
    const samples = await interleave(ROUNDS, {
      warmupSeconds: 1,
      ours: () =>
        seconds(async () => {
          const { sessions, problems, cursor } = await store.list({ limit: SESSIONS })
          if (sessions.length !== SESSIONS || problems.length !== 0 || cursor !== null)
            throw new Error(`list() gave ${sessions.length} sessions and ${problems.length} problems`)
        }),
      floor: () =>
        seconds(async () => {
          const parsed = await bareList(root, { fileName: LOG_FILE_NAME, concurrency: CONCURRENCY })
          if (parsed !== SESSIONS) throw new Error(`floor parsed ${parsed} headers`)
        }),
    })
    return [
      throughputFigure({
        name: `list({ limit: ${SESSIONS} }) over ${SESSIONS} sessions (headers only)`,
        unit: 'sessions/s',
        work: SESSIONS,
        samples,
        floorName: `bare readdir + open + read first line + JSON.parse (${CONCURRENCY} at a time)`,
      }),
    ]
  } finally {
    await store.close()
  }
}
