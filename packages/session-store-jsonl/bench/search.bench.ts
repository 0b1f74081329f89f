/**
 * `store.search` on JSONL (issue 26): p50 of one query over a corpus of
 * `AGENT_LEDGER_SEARCH_MB` megabytes of plain logs (default 16; `--large`: 1024, the issue's
 * 1 GB; `tooling/bench/search-corpus.ts`, cached between runs), through
 * `createJsonlStore({ root }).search(RARE_WORD, { limit: 20 })`: the core's streaming scan
 * (this backend has no index yet: every line is read and checked by the backend, the raw-line
 * prefilter skips the ones without the word, the few left are decoded and matched).
 *
 * - Floor: the bare `grep -F`: every log file read whole and `Buffer.indexOf` of the word
 *   counted (no JSON, no checksums, no case folding), the same bytes.
 * - Ratio: ours / floor (no target: the scan is the fallback). The target, p50 <= 200
 *   ms over 1 GB, is for an index: the figure's `met` says whether this size meets it.
 * - Index bytes: none (no sidecar): 0 extra bytes per log byte.
 *
 * Run alone with `pnpm bench --only search.bench` (load average: say it with the figures).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { corpusBytes, RARE_WORD, writeCorpus } from '../../../tooling/bench/search-corpus.ts'
import { createJsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { cached } from './support/dataset.ts'
import { interleave, progress } from './support/measure.ts'
import type { BenchResult, RunOptions } from './support/measure.ts'
import { median } from '../../../tooling/bench/support.ts'

const ROUNDS = 5
const TARGET_MS = 200
const log = progress('search')

function logFiles(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(root, entry.name, LOG_FILE_NAME))
}

function logBytes(root: string): number {
  return logFiles(root).reduce((sum, file) => sum + statSync(file).size, 0)
}

export async function run(options: RunOptions = {}): Promise<BenchResult[]> {
  const bytes = corpusBytes(options.scale ?? 'default')
  const { directory, info } = await cached({ kind: 'search-corpus', bytes, version: 1 }, async (building) => {
    const root = join(building, 'root')
    const store = createJsonlStore({ root, clock: () => '2026-12-01T00:00:00.000Z', redaction: null })
    try {
      return await writeCorpus(store, bytes, async () => Promise.resolve(logBytes(root)))
    } finally {
      await store.close()
    }
  })
  const root = join(directory, 'root')
  const total = logBytes(root)
  const store = createJsonlStore({ root, clock: () => '2026-12-01T00:00:00.000Z' })
  const word = Buffer.from(RARE_WORD)
  let hits = 0
  let found = 0
  try {
    const samples = await interleave(ROUNDS, {
      ours: async () => {
        const started = performance.now()
        hits = (await store.search(RARE_WORD, { limit: 20 })).hits.length
        return performance.now() - started
      },
      floor: () => {
        const started = performance.now()
        found = 0
        for (const file of logFiles(root)) {
          const text = readFileSync(file)
          for (let at = text.indexOf(word); at !== -1; at = text.indexOf(word, at + 1)) found += 1
        }
        return Promise.resolve(performance.now() - started)
      },
    })
    if (hits !== Math.min(info.planted, 20) || found !== info.planted) {
      throw new Error(`search bench: expected ${info.planted} hits, found ${hits} (floor ${found})`)
    }
    const ours = median(samples.ours)
    const floor = median(samples.floor)
    const mb = (total / 1024 / 1024).toFixed(0)
    log(`${info.sessions} sessions, ${mb} MB of log, ${hits} hits`)
    return [
      {
        name: `search p50, JSONL scan, ${mb} MB (${info.sessions} sessions, ${hits} hits)`,
        value: ours,
        unit: 'ms',
        floor: { name: 'bare read + Buffer.indexOf of the same logs', value: floor },
        ratio: ours / floor,
        target: `p50 <= ${TARGET_MS} ms (issue: over 1 GB, with an index)`,
        met: ours <= TARGET_MS,
      },
      {
        name: `search index bytes per log byte, JSONL (no index: scan)`,
        value: 0,
        unit: 'x',
        target: '<= 0.3',
        met: true,
      },
    ]
  } finally {
    await store.close()
  }
}
