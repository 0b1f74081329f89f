/**
 * Prints one plain closing line, `N passed, N failed`, summed over every package's vitest
 * JSON reports (`test-results.json` for unit tests, `e2e-results.json` for end-to-end
 * tests, and `tooling-test-results.json` at the root for the tests of `tooling/`), so a run that executed no test is visible in CI. `--crash` reads the crash suite's
 * `crash-results.json` instead.
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
const reportNames = process.argv.includes('--crash')
  ? ['crash-results.json']
  : ['test-results.json', 'e2e-results.json']
let passed = 0
let failed = 0
let skipped = 0
const seen: string[] = []
for (const group of ['packages', 'apps']) {
  for (const entry of readdirSync(join(root, group))) {
    for (const reportName of reportNames) {
      const file = join(root, group, entry, reportName)
      if (!existsSync(file)) continue
      const report = JSON.parse(readFileSync(file, 'utf8')) as VitestJsonReport
      passed += report.numPassedTests
      failed += report.numFailedTests
      skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)
      seen.push(
        `${group}/${entry}/${reportName}: ${report.numPassedTests} passed, ${report.numFailedTests} failed`,
      )
    }
  }
}
// The tests of tooling/ (pnpm test:tooling) report beside the root package.json.
const toolingReport = join(root, 'tooling-test-results.json')
if (!process.argv.includes('--crash') && existsSync(toolingReport)) {
  const report = JSON.parse(readFileSync(toolingReport, 'utf8')) as VitestJsonReport
  passed += report.numPassedTests
  failed += report.numFailedTests
  seen.push(`tooling-test-results.json: ${report.numPassedTests} passed, ${report.numFailedTests} failed`)
}
for (const line of seen) console.log(`  ${line}`)
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`)
if (seen.length === 0 || passed + failed === 0 || failed > 0) process.exit(1)
