/**
 * `node` arguments that run a TypeScript entry of the workspace in ONE process through
 * tooling/launch.mjs (bundled once with esbuild under the `@agent-ledger/source` condition,
 * cached in `node_modules/.cache/agent-ledger/`, rebuilt when an input changes), as the root
 * scripts (`pnpm demo`, `pnpm agent-ledger`) run them. Tests that start TypeScript children
 * (SIGKILL targets, second writers) spawn `process.execPath` with these: a start costs about
 * a quarter of `node --import tsx` (which loads and resolves every module through the loader),
 * and SIGKILL still hits the process holding the files, as the entry runs in the launcher's
 * process. A child the entry starts with `process.execArgv` runs through the launcher too.
 */
import { fileURLToPath } from 'node:url'

/** Absolute path of tooling/launch.mjs. */
export const LAUNCHER = fileURLToPath(new URL('./launch.mjs', import.meta.url))

/**
 * The arguments of `node` that run `entry` with `args`.
 *
 * @param entry - Absolute path of the TypeScript entry.
 * @param args - Its arguments.
 */
export function launchArgs(entry: string, args: readonly string[] = []): string[] {
  return [LAUNCHER, entry, ...args]
}
