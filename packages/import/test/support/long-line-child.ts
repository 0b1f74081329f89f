/**
 * Child of `long-line-rss.test.ts`: imports one file through `splitLines` (with the given line
 * limit) and `importSource`, then prints its peak RSS and the RSS it started with, and the
 * outcome (the report's counts, or the error's code and message).
 *
 *   tsx long-line-child.ts <file> <maxLineLength> <strict|lenient>
 */
import { createReadStream } from 'node:fs'

import { importSource, splitLines } from '../../src/index.ts'

const [file = '', limit = '0', mode = 'strict'] = process.argv.slice(2)
const startRss = process.memoryUsage().rss
const chunks = createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 }) as AsyncIterable<string>
let outcome: Record<string, unknown>
try {
  const result = await importSource(splitLines(chunks, { maxLineLength: Number(limit) }), {
    file: 'long.jsonl',
    sha256: '0'.repeat(64),
    lenient: mode === 'lenient',
  })
  outcome = {
    records: result.report.records,
    skipped: result.report.diagnostics.filter((finding) => finding.code === 'LINE_TOO_LARGE').length,
  }
} catch (error) {
  outcome = { code: (error as { code?: unknown }).code, message: (error as Error).message }
}
process.stdout.write(
  `${JSON.stringify({ outcome, startRss, maxRss: process.resourceUsage().maxRSS * 1024 })}\n`,
)
