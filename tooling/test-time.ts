import { availableParallelism, loadavg } from 'node:os'

/**
 * The one place a test's deadline comes from. A deadline in a test only stops a hung test;
 * it never judges speed (speed lives in `pnpm bench`). Every deadline is written as
 * `testTime(ms)`: `ms` is what the step takes with room to spare on an idle machine, and the
 * scale stretches it on a slow or busy one.
 *
 * The scale is `AGENT_LEDGER_TEST_TIME_SCALE` when set (a number >= 1); otherwise the
 * largest of 1, 2 under `CI`, and the one-minute load average per core (rounded up, at most
 * 20: load 30 on 2 cores gives 15). The vitest config ({@link ./vitest.shared.ts}) fixes the
 * value in the environment once per run, so the config, the workers and their children
 * agree on one value.
 */
export const TEST_TIME_SCALE_ENV = 'AGENT_LEDGER_TEST_TIME_SCALE'

/** The scale for an environment and a load average; exported for its test. */
export function resolveTestTimeScale(
  env: Readonly<Record<string, string | undefined>>,
  loadPerCore: number,
): number {
  const given = env[TEST_TIME_SCALE_ENV]
  if (given !== undefined && given !== '') {
    const value = Number(given)
    if (!Number.isFinite(value) || value < 1)
      throw new Error(`${TEST_TIME_SCALE_ENV}: expected a number >= 1, found ${JSON.stringify(given)}`)
    return value
  }
  const ci = env['CI'] !== undefined && env['CI'] !== '' && env['CI'] !== 'false' ? 2 : 1
  return Math.max(1, ci, Math.min(20, Math.ceil(loadPerCore)))
}

/** This run's scale; the first read fixes it in `process.env` for workers and children. */
export function testTimeScale(): number {
  const scale = resolveTestTimeScale(process.env, loadavg()[0]! / availableParallelism())
  process.env[TEST_TIME_SCALE_ENV] = String(scale)
  return scale
}

/** A deadline of `ms` on an idle machine, stretched by the run's scale. */
export function testTime(ms: number): number {
  return Math.ceil(ms * testTimeScale())
}

/**
 * Polls `predicate` until it holds: the way a test waits on a condition (a file, a line of
 * output, a row). Rejects after `testTime(timeoutMs)`, a guard against a hang whose message
 * names what was awaited (and `detail()`, e.g. the output so far), never a speed verdict.
 */
export async function waitUntil(
  what: string,
  predicate: () => boolean | Promise<boolean>,
  options: { readonly timeoutMs?: number; readonly pollMs?: number; readonly detail?: () => string } = {},
): Promise<void> {
  const limit = testTime(options.timeoutMs ?? 30_000)
  const started = Date.now()
  while (!(await predicate())) {
    if (Date.now() - started > limit) {
      const detail = options.detail === undefined ? '' : `: ${options.detail()}`
      throw new Error(`waited ${limit} ms for ${what} (the hang guard, scaled by testTime)${detail}`)
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 10))
  }
}
