import { availableParallelism } from 'node:os'

import { defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

import { testTime } from './test-time.ts'

/** Sibling packages resolve to their TypeScript sources, so tests need no build. */
export const sourceConditions = ['@agent-ledger/source', ...defaultServerConditions]

/**
 * Test files run at once, for a package that opts in (`maxWorkers: testWorkers` in its
 * vitest config): one per core, at least 2. Vitest's own default is one fewer than the
 * cores, which on the 2-core CI machine is a single worker, while the slow files mostly wait
 * on child processes and PostgreSQL rather than on the CPU. A package opts in once its
 * files are known not to share state (own temp directories, own databases) and its suite
 * passed with two workers; a verdict never depends on speed (deadlines are `testTime`).
 */
export const testWorkers = Math.max(2, availableParallelism())

/**
 * For a package that opts in (`isolate: isolateFiles` in its vitest config): whether each test
 * file gets a fresh worker process. Vitest's default (true) loads the package's sources and
 * their dependencies again for every file: in the gate's run of 2026-12-02 vitest's closing line
 * put "import" at 40 s of session-store-jsonl's 235 s and at 57 s of the CLI's 109 s of tests
 * (two workers). With `false` the files of one worker share one
 * module graph, loaded once. A package opts in once its files are known to leave nothing
 * behind in the process (no module-level state they change, no `vi.mock`, process.env,
 * umask or cwd put back, every timer and child ended) and its whole suite passed so.
 */
export const isolateFiles = false

/**
 * The one vitest config every package re-exports.
 *
 * The default run (`pnpm test`) takes `test/**\/*.test.ts` and the type tests; the long
 * crash and fuzz runs (`*.crash.test.ts`) only run under `pnpm test:crash`.
 *
 * Every timeout is `testTime(ms)` (tooling/test-time.ts): a timeout only stops a hung test,
 * and the scale (`AGENT_LEDGER_TEST_TIME_SCALE`, else from `CI` and the load average)
 * stretches it on a busy machine. The e2e and crash configs take theirs from here too.
 */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/*.e2e.test.ts', '**/*.crash.test.ts', '**/node_modules/**'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    restoreMocks: true,
    testTimeout: testTime(60_000),
    hookTimeout: testTime(30_000),
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
  },
})
