/**
 * The vitest config of a framework-version run (tooling/frameworks-next.ts): the shared
 * config, with each framework specifier aliased to the copy under test. The aliases come
 * from AGENT_LEDGER_FRAMEWORK_ALIASES (JSON: specifier -> file), the same variable the
 * child processes' resolve hook (framework-aliases.mjs) reads.
 */
import { mergeConfig } from 'vitest/config'
import type { ViteUserConfig } from 'vitest/config'

import shared from '../vitest.shared.ts'

/** Where the run's JSON report goes, relative to the package (test-output/ is gitignored). */
export const NEXT_REPORT = 'test-output/next-results.json'

/** The config for a package directly under packages/ (its store matrix needs the PostgreSQL setup). */
export function frameworkNextConfig(): ViteUserConfig {
  const text = process.env.AGENT_LEDGER_FRAMEWORK_ALIASES
  if (text === undefined || text === '')
    throw new Error(
      'vitest.next.config.ts: run it through tooling/frameworks-next.ts (AGENT_LEDGER_FRAMEWORK_ALIASES is not set)',
    )
  const aliases = JSON.parse(text) as Record<string, string>
  return mergeConfig(shared, {
    resolve: {
      alias: Object.entries(aliases).map(([specifier, file]) => ({
        find: new RegExp(`^${specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`),
        replacement: file,
      })),
    },
    test: {
      // The type tests run against the workspace's framework types in the normal suite.
      typecheck: { enabled: false },
      globalSetup: ['../../tooling/pg/global-setup.ts'],
      // Not test-results.json (the Node 20 run's report): tooling/gate.ts reads this one as the frameworks-next step's.
      outputFile: { json: NEXT_REPORT },
    },
  })
}
