import { mergeConfig } from 'vitest/config'

import shared, { isolateFiles } from '../../tooling/vitest.shared.ts'

/** The shared config; its files share one module graph per worker (see `isolateFiles`). */
export default mergeConfig(shared, { test: { isolate: isolateFiles } })
