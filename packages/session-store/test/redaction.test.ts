import { fc } from '@fast-check/vitest'
import { describe, expect, it } from 'vitest'

import {
  createMemoryBackend,
  createSessionStore,
  DEFAULT_REDACTION_POLICY,
  DEFAULT_SECRET_PATTERNS,
} from '../src/index.ts'
import type { LoggedEvent } from '@agent-ledger/session-events'

const clock = (): string => '2026-01-01T00:00:00.000Z'
const secret = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123'

async function stored(store: ReturnType<typeof createSessionStore>, id: string): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) found.push(event)
  return found
}

describe('redaction (RELIABILITY S8) in the core', () => {
  it('by default keeps tokens out of the stored lines and the projection; the header names the policy', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock })
    const writer = await store.create({ id: 'r1' })
    expect(writer.header).toMatchObject({
      redaction: { policyVersion: DEFAULT_REDACTION_POLICY.policyVersion },
    })
    const input = {
      type: 'user/message',
      data: { message: { role: 'user', content: `my key is ${secret}` } },
    } as const
    const event = writer.append(input)
    expect(input.data.message.content).toContain(secret)
    expect(JSON.stringify(event)).not.toContain(secret)
    expect(JSON.stringify(writer.deriveMessages())).toContain('[REDACTED:openai-key]')
    await writer.close()
    const lines: string[] = []
    for await (const line of backend.read('r1', { fromSeq: 0 })) lines.push(line.line)
    expect(lines.join('\n')).not.toContain(secret)
    expect(await stored(store, 'r1')).toEqual([event])
  })

  it('fails closed with REDACTION_FAILED when the hook throws or returns a non-string; nothing is buffered', async () => {
    for (const redact of [
      (): string => {
        throw new Error('hook down')
      },
      (): string => 42 as unknown as string,
    ]) {
      const store = createSessionStore({
        backend: createMemoryBackend(),
        clock,
        redaction: { policyVersion: 'test-1', redact },
      })
      const writer = await store.create({ id: 'r2' })
      expect(() =>
        writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'x' } } }),
      ).toThrow(expect.objectContaining({ code: 'REDACTION_FAILED', details: { policyVersion: 'test-1' } }))
      expect(writer.bufferedEvents).toBe(0)
      await writer.close()
    }
  })

  it('with redaction: null stores strings verbatim and writes no redaction header member', async () => {
    const store = createSessionStore({ backend: createMemoryBackend(), clock, redaction: null })
    const writer = await store.create({ id: 'r3' })
    expect(Object.hasOwn(writer.header, 'redaction')).toBe(false)
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: secret } } })
    await writer.close()
    expect(JSON.stringify(await stored(store, 'r3'))).toContain(secret)
  })
})

describe('the default policy pre-filter', () => {
  /** The seven patterns run on every string, without the trigger pre-filter (the reference). */
  function redactWithoutPrefilter(text: string): string {
    let result = text
    for (const { label, pattern } of DEFAULT_SECRET_PATTERNS) {
      pattern.lastIndex = 0
      result = result.replace(pattern, (_match: string, prefix: unknown) =>
        label === 'bearer-token' && typeof prefix === 'string'
          ? `${prefix}[REDACTED:${label}]`
          : `[REDACTED:${label}]`,
      )
    }
    return result
  }

  const pieces = [
    'sk-',
    'sk-ant-',
    'sk-proj-',
    'sk-svcacct-',
    'AKIA',
    'ASIA',
    'AGPA',
    'AIDA',
    'AROA',
    'ghp_',
    'gho_',
    'ghu_',
    'ghs_',
    'ghr_',
    'github_pat_',
    'xoxa-',
    'xoxb-',
    'xoxp-',
    'xoxr-',
    'xoxs-',
    'Bearer ',
    'bEaReR\t',
    'BEARER\n',
    '-----BEGIN RSA PRIVATE KEY-----',
    '-----END RSA PRIVATE KEY-----',
    '-----BEGIN PRIVATE KEY-----\n',
    'ABCDEFGHIJKLMNOP',
    'abcdefghijklmnopqrstuvwxyz0123456789',
    '0123456789ABCDEF',
    '_-',
    ' ',
    '.',
    'é',
    '\n',
  ]

  it('redacts exactly what the seven patterns redact, on strings built from trigger and key pieces', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string()), { maxLength: 12 }), (parts) => {
        const text = parts.join('')
        expect(DEFAULT_REDACTION_POLICY.redact(text)).toBe(redactWithoutPrefilter(text))
      }),
      { numRuns: 3000 },
    )
  })

  it('returns the very string when no trigger occurs, and redacts each shape when one does', () => {
    const plain = 'a tool output with sk and AKI and gh_ and xox and bearer-less text\n'.repeat(100)
    expect(DEFAULT_REDACTION_POLICY.redact(plain)).toBe(plain)
    const samples: Record<string, string> = {
      'anthropic-key': 'sk-ant-abcdefgh12345',
      'openai-key': 'sk-abcdefghijklmnopqrstuvwx',
      'aws-access-key-id': 'AKIAABCDEFGHIJKLMNOP',
      'github-token': 'ghp_abcdefghijklmnopqrstuvwxyz',
      'slack-token': 'xoxb-1234567890-abc',
      'bearer-token': 'bearer abcdefgh.ijk',
      'private-key': '-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----',
    }
    for (const [label, secret] of Object.entries(samples)) {
      const redacted = DEFAULT_REDACTION_POLICY.redact(`before ${secret} after`)
      expect(redacted, label).toContain(`[REDACTED:${label}]`)
      expect(redacted, label).not.toContain(secret)
    }
  })
})
