import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { validateProviderMessages } from '@agent-ledger/loop-repair'
import type { LoggedEvent, WireMessage } from '@agent-ledger/session-events'
import { createSessionLog } from '@agent-ledger/session-projection'

import { importEventRegistry, importSource, splitLines } from '../../src/index.ts'
import type { ImportOptions, ImportResult } from '../../src/index.ts'

const here = dirname(fileURLToPath(import.meta.url))
/** The shared recordings: `<repo root>/../shared/fixtures/import` (CI puts them there too). */
export const SHARED_FIXTURES = join(here, '..', '..', '..', '..', '..', 'shared', 'fixtures', 'import')
/** This package's synthetic fixtures. */
export const SYNTHETIC = join(here, '..', 'fixtures')

/** Whether the shared fixtures are present; under CI=true a missing directory fails instead. */
export function sharedFixturesAvailable(): boolean {
  if (existsSync(SHARED_FIXTURES)) return true
  if (process.env['CI'] === 'true') throw new Error(`shared import fixtures missing at ${SHARED_FIXTURES}`)
  console.log(
    `skipping shared-fixture tests: ${SHARED_FIXTURES} does not exist (it sits beside the repository in CI)`,
  )
  return false
}

async function* once(text: string): AsyncGenerator<string> {
  await Promise.resolve()
  // Cut the text into odd-sized chunks so line splitting across chunks is exercised.
  for (let index = 0; index < text.length; index += 997) yield text.slice(index, index + 997)
}

/** Imports text as a file would be imported (chunks → lines → importSource). */
export function importText(
  text: string,
  options: Partial<ImportOptions> & { file?: string } = {},
): Promise<ImportResult> {
  return importSource(splitLines(once(text)), {
    file: options.file ?? 'source.jsonl',
    sha256: createHash('sha256').update(text).digest('hex'),
    ...options,
  })
}

/** Imports a file (read once, never modified). */
export function importFile(path: string, options: Partial<ImportOptions> = {}): Promise<ImportResult> {
  return importText(readFileSync(path, 'utf8'), { file: path, ...options })
}

/** Replays a session's events through a fresh in-memory log (every check of an append) and returns its messages. */
export function replay(events: readonly LoggedEvent[]): readonly WireMessage[] {
  const log = createSessionLog({
    clock: { now: () => '2026-01-01T00:00:00.000Z' },
    registry: importEventRegistry,
    events,
  })
  const messages = log.deriveMessages()
  const issues = validateProviderMessages(messages)
  if (issues.length > 0) throw new Error(`provider issues: ${JSON.stringify(issues)}`)
  return messages
}

/** The source lines kept verbatim by `import/source-record` events. */
export function verbatimLines(events: readonly LoggedEvent[]): number[] {
  return events
    .filter((event) => event.type === 'import/source-record')
    .map((event) => (event.data as { line: number }).line)
}
