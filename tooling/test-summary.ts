/**
 * Prints one plain closing line, `N passed, N failed`, summed over every package's vitest
 * JSON report (test-results.json), so a run that executed no test is visible in CI.
 * Exits 1 when no report exists or nothing ran.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

interface VitestJsonReport {
  numPassedTests: number
  numFailedTests: number
  numPendingTests?: number
  numTodoTests?: number
}

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const reportName = process.argv[2] ?? 'test-results.json'
let passed = 0
let failed = 0
let skipped = 0
const seen: string[] = []
for (const group of ['packages', 'apps']) {
  for (const entry of readdirSync(join(root, group))) {
    const file = join(root, group, entry, reportName)
    if (!existsSync(file)) continue
    const report = JSON.parse(readFileSync(file, 'utf8')) as VitestJsonReport
    passed += report.numPassedTests
    failed += report.numFailedTests
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)
    seen.push(`${group}/${entry}: ${report.numPassedTests} passed, ${report.numFailedTests} failed`)
  }
}
for (const line of seen) console.log(`  ${line}`)
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`)
if (seen.length === 0 || passed + failed === 0 || failed > 0) process.exit(1)
