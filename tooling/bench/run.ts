/**
 * `pnpm bench`: runs every `packages/<name>/bench/*.bench.ts` and `apps/<name>/bench/*.bench.ts`
 * module (found by name: adding a file registers it), prints one table (each figure, its floor
 * measured in the same run, the ratio, the target and met / MISSED), and writes
 * `bench/results.json`.
 *
 * Ratios are the claim; absolute figures are printed too but depend on the (shared, noisy)
 * machine. `--large` runs the larger datasets; `--only <substring>` (repeatable) filters
 * modules by path; `--check` exits 1 when a figure misses its target or a module fails (for
 * release checks on a quiet machine: never in CI, where the machines are too noisy).
 *
 * `bench/results.json` is gitignored: its figures belong to one machine and one moment, and
 * engineers running benches in parallel would conflict on it in every merge. The report of a
 * change quotes the table it printed instead.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { checkProblems, findBenchModules, formatTable, parseBenchArgs } from './report.ts'
import type { ModuleResult } from './report.ts'
import type { BenchModule } from './types.ts'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..')
const args = parseBenchArgs(process.argv.slice(2))
const modules = findBenchModules(root, args.only)

const all: ModuleResult[] = []
const failures: { module: string; error: string }[] = []
const started = performance.now()
for (const file of modules) {
  const module = relative(root, file)
  console.error(`bench: running ${module} (${args.scale})`)
  try {
    const loaded = (await import(pathToFileURL(file).href)) as BenchModule
    const results = await loaded.run({ scale: args.scale })
    for (const result of results) all.push({ module, ...result })
  } catch (error) {
    failures.push({ module, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    console.error(`bench: ${module} failed: ${String(error)}`)
  }
}

for (const line of formatTable(all)) console.log(line)

mkdirSync(join(root, 'bench'), { recursive: true })
const problems = checkProblems(all, failures)
const output = {
  generatedAt: new Date().toISOString(),
  scale: args.scale,
  machine: { node: process.version, cpus: cpus().length, totalMemoryBytes: totalmem() },
  wallSeconds: (performance.now() - started) / 1000,
  results: all,
  failures,
  missed: problems,
}
writeFileSync(join(root, 'bench', 'results.json'), `${JSON.stringify(output, null, 2)}\n`)
const targets = all.filter((result) => result.target !== undefined).length
const missed = problems.filter((problem) => problem.figure !== null).length
console.log(
  `\nbench: ${all.length} figures from ${modules.length} modules in ${output.wallSeconds.toFixed(1)} s; ${targets - missed} of ${targets} targets met; wrote bench/results.json`,
)
if (args.check && problems.length > 0) {
  console.error(`bench --check: ${problems.length} problem(s):`)
  for (const problem of problems) {
    console.error(`  ${problem.module}: ${problem.figure ?? '(module)'}: ${problem.message}`)
  }
  process.exitCode = 1
} else if (failures.length > 0) {
  process.exitCode = 1
}
