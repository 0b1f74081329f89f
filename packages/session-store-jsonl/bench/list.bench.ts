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

import { createJsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { smallSessionsRoot } from './support/dataset.ts'
import { bareList } from './support/floors.ts'
import { interleave, progress, seconds, throughputFigure } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'

const SESSIONS = 1000
/** Headers the floor reads at a time. */
const CONCURRENCY = 16
const ROUNDS = 7
const log = progress('list')

/** A root of {@link SESSIONS} sessions created through the store (cached). */
async function ensureRoot(): Promise<string> {
  const { root, builtSeconds } = await smallSessionsRoot('list-root', SESSIONS)
  if (builtSeconds !== null) log(`created ${SESSIONS} sessions in ${builtSeconds.toFixed(1)} s`)
  return root
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
