import { describe, expect, it } from 'vitest'

import {
  SESSION_FORMAT_NAME,
  SESSION_FORMAT_VERSION,
  SESSION_ID_PATTERN,
  sessionHeaderSchema,
  sessionIdSchema,
} from '../src/index.ts'

const header = {
  format: SESSION_FORMAT_NAME,
  version: SESSION_FORMAT_VERSION,
  id: 'session_01-abc',
  createdAt: '2025-01-01T00:00:00Z',
}

describe('sessionHeaderSchema', () => {
  it('writes format version 4 under the agent-ledger.session format name', () => {
    expect(SESSION_FORMAT_VERSION).toBe(4)
    expect(SESSION_FORMAT_NAME).toBe('agent-ledger.session')
  })

  it('accepts a minimal header and one with every optional field', () => {
    expect(sessionHeaderSchema.parse(header)).toEqual(header)
    const full = {
      ...header,
      cwd: '/work',
      parentSession: 'parent',
      seeded: true,
      inheritedEventCount: 12,
      delegationDepth: 1,
      integrity: 'crc32c',
      migratedFrom: { file: 'session.jsonl', version: 0, sha256: 'a'.repeat(64), lastSeq: -1, bytes: 0 },
      metadata: { model: 'deepseek-chat', tags: ['a'] },
    }
    expect(sessionHeaderSchema.parse(full)).toEqual(full)
  })

  it.each([
    ['format', { ...header, format: 'other' }],
    ['version', { ...header, version: -1 }],
    ['id', { ...header, id: '../etc' }],
    ['createdAt', { ...header, createdAt: '' }],
    ['delegationDepth', { ...header, delegationDepth: 0.5 }],
    [
      'migratedFrom',
      { ...header, migratedFrom: { file: 'x', version: 0, sha256: 'zz', lastSeq: 0, bytes: 0 } },
    ],
    ['metadata', { ...header, metadata: ['not', 'an', 'object'] }],
    ['metadata', { ...header, metadata: null }],
  ])('refuses a bad %s', (field, value) => {
    const result = sessionHeaderSchema.safeParse(value)
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path[0]).toBe(field)
  })

  it('S3: reads version as an own property, never through an own __proto__ key', () => {
    const line = JSON.stringify(header)
      .replace('{', '{"__proto__":{"version":1},')
      .replace('"version":4', '"version":99')
    const parsed = sessionHeaderSchema.parse(JSON.parse(line))
    expect(parsed.version).toBe(99)
    expect(({} as Record<string, unknown>)['version']).toBeUndefined()
  })

  it('S3: keeps an own __proto__ key in metadata as data', () => {
    const value = JSON.parse(
      JSON.stringify(header).replace('{', '{"metadata":{"__proto__":{"polluted":true},"title":"t"},'),
    ) as {
      metadata: object
    }
    const parsed = sessionHeaderSchema.parse(value)
    expect(Object.getOwnPropertyNames(parsed.metadata)).toEqual(['__proto__', 'title'])
    expect(JSON.stringify(parsed.metadata)).toBe('{"__proto__":{"polluted":true},"title":"t"}')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })
})

describe('sessionIdSchema', () => {
  it.each(['a', 'A_b-9', '_x', 'a'.repeat(128)])('accepts %j', (id) => {
    expect(sessionIdSchema.safeParse(id).success).toBe(true)
  })

  it.each([
    '',
    '..',
    '../x',
    'a/b',
    'a\\b',
    '/x/y',
    '%2e%2e',
    '.hidden',
    'a\0b',
    'a'.repeat(129),
    '-x',
    'x\u202e',
    'a\n',
    'a.b',
  ])('S2: refuses %j', (id) => {
    expect(sessionIdSchema.safeParse(id).success).toBe(false)
    expect(SESSION_ID_PATTERN.test(id)).toBe(false)
  })
})
