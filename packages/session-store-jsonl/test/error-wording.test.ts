import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { JsonlStoreError } from '../src/jsonl-store-error.ts'
import { migrateSession } from '../src/migration/migrate-session.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-wording-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let counter = 0

const HEADER = { seq: 0, time: '2025-05-07T08:00:00.000Z', type: 'session/header', data: { version: 0 } }

function v0Session(lines: readonly unknown[]): string {
  counter += 1
  const directory = join(scratch, `s${counter}`)
  mkdirSync(directory, { mode: 0o700 })
  writeFileSync(join(directory, 'session.jsonl'), lines.map((line) => `${JSON.stringify(line)}\n`).join(''), {
    mode: 0o600,
  })
  return directory
}

async function readFailure(directory: string): Promise<JsonlStoreError> {
  try {
    const result = await migrateSession({ mode: 'read', directory })
    for await (const _event of result.events) {
      // consume
    }
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a typed error')
}

describe('error messages say in words what they found', () => {
  it('a header without "type" is "no "type" member", not "type nothing"', async () => {
    const { type: _type, ...headerless } = HEADER
    const error = await readFailure(v0Session([headerless]))
    expect(error.message).toContain('found no "type" member')
    expect(error.message).not.toMatch(/nothing/)
  })

  it('an event without "seq" says the member is missing', async () => {
    const error = await readFailure(
      v0Session([HEADER, { time: '2025-05-07T08:00:01.000Z', type: 'turn/start', data: { turn: 1 } }]),
    )
    expect(error.message).toContain('found no "seq" member')
    expect(error.message).not.toMatch(/nothing/)
  })

  it('a header without "version" says the member is missing', async () => {
    const error = await readFailure(v0Session([{ ...HEADER, data: {} }]))
    expect(error.message).toContain('found no "version" member')
    expect(error.message).not.toMatch(/nothing/)
  })
})
