/**
 * `pnpm bench`: runs every `packages/<name>/bench/*.bench.ts` and `apps/<name>/bench/*.bench.ts`
 * module, prints one table, and writes `bench/results.json` (machine-readable).
 *
 * Ratios are the claim; absolute figures are printed too but depend on the (shared, noisy)
 * machine. `--large` runs the larger datasets; `--only <substring>` filters modules.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import type { BenchModule, BenchResult } from './types.ts'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..')
const args = process.argv.slice(2)
const scale = args.includes('--large') ? 'large' : 'default'
const onlyIndex = args.indexOf('--only')
const only = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined

function findModules(): string[] {
  const modules: string[] = []
  for (const group of ['packages', 'apps']) {
    for (const entry of readdirSync(join(root, group))) {
      const directory = join(root, group, entry, 'bench')
      if (!existsSync(directory)) continue
      for (const file of readdirSync(directory)) {
        if (file.endsWith('.bench.ts')) modules.push(join(directory, file))
      }
    }
  }
  return modules.filter((file) => only === undefined || file.includes(only)).sort()
}

function format(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  if (Math.abs(value) >= 1000) return value.toFixed(0)
  if (Math.abs(value) >= 10) return value.toFixed(1)
  return value.toFixed(3)
}

const all: (BenchResult & { module: string })[] = []
const failures: { module: string; error: string }[] = []
const started = performance.now()
for (const file of findModules()) {
  const module = relative(root, file)
  console.error(`bench: running ${module} (${scale})`)
  try {
    const loaded = (await import(pathToFileURL(file).href)) as BenchModule
    const results = await loaded.run({ scale })
    for (const result of results) all.push({ module, ...result })
  } catch (error) {
    failures.push({ module, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    console.error(`bench: ${module} failed: ${String(error)}`)
  }
}

const rows = all.map((result) => [
  result.name,
  `${format(result.value)} ${result.unit}`,
  result.floor ? `${result.floor.name}: ${format(result.floor.value)}` : '',
  result.ratio === undefined ? '' : format(result.ratio),
  result.target ?? '',
  result.met === undefined ? '' : result.met ? 'yes' : 'MISS',
])
const header = ['figure', 'ours', 'floor (same run)', 'ratio', 'target', 'met']
const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
const line = (cells: readonly string[]): string => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')
console.log(line(header))
console.log(widths.map((width) => '-'.repeat(width)).join('  '))
for (const row of rows) console.log(line(row))

mkdirSync(join(root, 'bench'), { recursive: true })
const output = {
  generatedAt: new Date().toISOString(),
  scale,
  machine: { node: process.version, cpus: cpus().length, totalMemoryBytes: totalmem() },
  wallSeconds: (performance.now() - started) / 1000,
  results: all,
  failures,
}
writeFileSync(join(root, 'bench', 'results.json'), `${JSON.stringify(output, null, 2)}\n`)
console.log(`\nbench: ${all.length} figures from ${findModules().length} modules in ${output.wallSeconds.toFixed(1)} s; wrote bench/results.json`)
if (failures.length > 0) process.exit(1)
