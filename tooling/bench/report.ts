/**
 * The pure half of `pnpm bench`: finding bench modules, the printed table, the
 * `bench/results.json` document and the `--check` verdict. `run.ts` does the I/O.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'

import type { BenchResult } from './types.ts'

/** Where bench modules live: `<group>/<name>/bench/*.bench.ts` for each group. */
const BENCH_GROUPS = ['packages', 'apps'] as const

/** Command-line options of `pnpm bench`. */
export interface BenchArgs {
  readonly scale: 'default' | 'large'
  /** Substrings: a module runs when its path contains any of them (all run when empty). */
  readonly only: readonly string[]
  /** Exit 1 when a figure misses its target (release checks on a quiet machine; never in CI). */
  readonly check: boolean
}

/**
 * Parses `pnpm bench` arguments: `--large`, `--check`, and `--only <substring>` (repeatable).
 *
 * @param args - `process.argv.slice(2)`.
 * @returns The options.
 * @throws Error naming the argument when one is unknown or `--only` has no value.
 */
export function parseBenchArgs(args: readonly string[]): BenchArgs {
  const only: string[] = []
  let scale: BenchArgs['scale'] = 'default'
  let check = false
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!
    if (arg === '--large') scale = 'large'
    else if (arg === '--check') check = true
    else if (arg === '--only') {
      const value = args[index + 1]
      if (value === undefined || value.startsWith('--')) {
        throw new Error('pnpm bench: expected a module path substring after --only, found none')
      }
      only.push(value)
      index += 1
    } else if (arg !== '--') {
      throw new Error(`pnpm bench: unknown argument ${JSON.stringify(arg)}; expected --large, --check or --only <substring>`)
    }
  }
  return { scale, only, check }
}

/**
 * Every bench module under `root`: `packages/<name>/bench/*.bench.ts` and
 * `apps/<name>/bench/*.bench.ts`, sorted. Registering a benchmark is adding such a file: no
 * list to edit, so engineers adding bench files never touch a shared line.
 *
 * @param root - The repository root.
 * @param only - Substrings to filter module paths (relative to `root`) by (none: every module).
 * @returns Absolute paths.
 */
export function findBenchModules(root: string, only: readonly string[] = []): string[] {
  const modules: string[] = []
  for (const group of BENCH_GROUPS) {
    const groupDirectory = join(root, group)
    if (!existsSync(groupDirectory)) continue
    for (const entry of readdirSync(groupDirectory)) {
      const directory = join(groupDirectory, entry, 'bench')
      if (!existsSync(directory)) continue
      for (const file of readdirSync(directory)) {
        if (file.endsWith('.bench.ts')) modules.push(join(directory, file))
      }
    }
  }
  // Matched against the path from the root: a checkout under a directory whose name holds the
  // substring (a worktree named after the bench) must not match every module.
  const matches = (file: string): boolean => only.some((part) => relative(root, file).includes(part))
  return modules.filter((file) => only.length === 0 || matches(file)).sort()
}

/**
 * A number for the table: no decimals from 1000, one from 10, three below.
 *
 * @param value - Any number.
 * @returns Its text.
 */
function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  if (Math.abs(value) >= 1000) return value.toFixed(0)
  if (Math.abs(value) >= 10) return value.toFixed(1)
  return value.toFixed(3)
}

/** A result with the module that produced it. */
export type ModuleResult = BenchResult & { readonly module: string }

/** What `met` column shows: `met`, `MISSED`, or empty for a context row without a target. */
function verdict(result: BenchResult): string {
  if (result.met === undefined) return result.target === undefined ? '' : '?'
  return result.met ? 'met' : 'MISSED'
}

/**
 * The table `pnpm bench` prints: one row per figure with our value, the floor measured in
 * the same run, the ratio, the target and whether it was met.
 *
 * @param results - Every figure, in run order.
 * @returns The lines of the table (no trailing newline).
 */
export function formatTable(results: readonly BenchResult[]): string[] {
  const rows = results.map((result) => [
    result.name,
    `${formatNumber(result.value)} ${result.unit}`,
    result.floor ? `${result.floor.name}: ${formatNumber(result.floor.value)}` : '',
    result.ratio === undefined ? '' : formatNumber(result.ratio),
    result.target ?? '',
    verdict(result),
  ])
  const header = ['figure', 'ours', 'floor (same run)', 'ratio', 'target', 'met']
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd()
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)]
}

/** A figure that missed its target, or a module that failed to run. */
export interface CheckProblem {
  readonly module: string
  /** The figure's name, or null for a module that threw. */
  readonly figure: string | null
  readonly message: string
}

/**
 * The `--check` verdict: every figure with a target that was not met, and every module that
 * failed. Empty means the check passes.
 *
 * @param results - Every figure.
 * @param failures - Modules that threw.
 * @returns The problems, in run order.
 */
export function checkProblems(
  results: readonly ModuleResult[],
  failures: readonly { readonly module: string; readonly error: string }[],
): CheckProblem[] {
  const problems: CheckProblem[] = []
  for (const result of results) {
    if (result.target === undefined || result.met === true) continue
    problems.push({
      module: result.module,
      figure: result.name,
      message: `expected ratio ${result.target}, found ${result.ratio === undefined ? 'no ratio' : formatNumber(result.ratio)}`,
    })
  }
  for (const failure of failures) {
    problems.push({ module: failure.module, figure: null, message: `the module failed: ${failure.error.split('\n')[0]}` })
  }
  return problems
}
