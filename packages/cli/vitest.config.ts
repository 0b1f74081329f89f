import { mergeConfig } from 'vitest/config'

import shared, { isolateFiles, testWorkers } from '../../tooling/vitest.shared.ts'

/**
 * The shared config plus one throwaway PostgreSQL cluster for the run
 * (test/support/pg-global-setup.ts); its files run two at a time (see `testWorkers`), those of
 * one worker in one module graph (see `isolateFiles`).
 */
export default mergeConfig(shared, {
  test: {
    globalSetup: ['./test/support/pg-global-setup.ts'],
    maxWorkers: testWorkers,
    isolate: isolateFiles,
  },
})
