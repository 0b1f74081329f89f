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
    expect(JSON.stringify(writer.deriveMessages())).toContain('[REDACTED:sk-key]')
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

  it('redacts the header (cwd, metadata) on create, and fails closed with REDACTION_FAILED when the hook fails there', async () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock })
    const writer = await store.create({
      id: 'r4',
      header: { cwd: `/tmp/${secret}`, metadata: { key: secret, url: 'mysql://root:toor@db/x' } },
    })
    expect(writer.header).toMatchObject({
      cwd: '/tmp/[REDACTED:sk-key]',
      metadata: { key: '[REDACTED:sk-key]', url: 'mysql://root:[REDACTED:url-password]@db/x' },
    })
    await writer.close()
    expect((await backend.readHeader('r4')).line).not.toContain(secret)
    const failing = createSessionStore({
      backend,
      clock,
      redaction: {
        policyVersion: 'test-2',
        redact: (text) => {
          if (text.includes('boom')) throw new Error('hook down')
          return text
        },
      },
    })
    await expect(failing.create({ id: 'r5', header: { metadata: { note: 'boom' } } })).rejects.toMatchObject({
      code: 'REDACTION_FAILED',
      details: { policyVersion: 'test-2', field: 'metadata' },
    })
    await expect(backend.readHeader('r5')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
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
  /** The full patterns run on every string, without the trigger pre-filter (the reference). */
  function redactWithoutPrefilter(text: string): string {
    let result = text
    for (const { label, pattern } of DEFAULT_SECRET_PATTERNS) {
      pattern.lastIndex = 0
      result = result.replace(pattern, (_match: string, prefix: unknown) =>
        typeof prefix === 'string' ? `${prefix}[REDACTED:${label}]` : `[REDACTED:${label}]`,
      )
    }
    return result
  }

  const pieces = [
    'sk-',
    'sk-ant-',
    'sk-proj-',
    'sk-svcacct-',
    'sk-admin-',
    'sk-or-v1-',
    'sk-ant-api03-',
    'aws_secret_access_key=',
    'AWS_SECRET_ACCESS_KEY = "',
    '"SecretAccessKey": "',
    'secret-access',
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'postgres://',
    'redis://:',
    'user:',
    'p@ss',
    '@host',
    '://',
    '/',
    '@',
    ':',
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

  it('redacts exactly what the full patterns redact, on strings built from trigger and key pieces', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string()), { maxLength: 12 }), (parts) => {
        const text = parts.join('')
        expect(DEFAULT_REDACTION_POLICY.redact(text)).toBe(redactWithoutPrefilter(text))
      }),
      { numRuns: 3000 },
    )
  })

  it('finds a trigger that overlaps the one before it (the counterexample fast-check found)', () => {
    // "sk-" ends inside "-----BEGIN ": a search that resumed after the first trigger missed the key.
    expect(DEFAULT_REDACTION_POLICY.redact('sk-----BEGIN PRIVATE KEY-----\n')).toBe(
      'sk[REDACTED:private-key]',
    )
    const overlapping =
      'see sk-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- and :://x:pw@h'
    expect(DEFAULT_REDACTION_POLICY.redact(overlapping)).toBe(redactWithoutPrefilter(overlapping))
    expect(DEFAULT_REDACTION_POLICY.redact(overlapping)).not.toContain('MIIB')
  })

  it('returns the very string when no trigger occurs, and redacts each shape when one does', () => {
    const plain = 'a tool output with sk and AKI and gh_ and xox and bearer-less text\n'.repeat(100)
    expect(DEFAULT_REDACTION_POLICY.redact(plain)).toBe(plain)
    const samples: Record<string, string> = {
      'anthropic-key': 'sk-ant-abcdefgh12345',
      'sk-key': 'sk-abcdefghijklmnopqrstuvwx',
      'aws-secret-access-key': 'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'url-password': 'postgres://user:pa55word@host/db',
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

describe('the default policy on each secret shape inside larger text', () => {
  const chars = (ranges: string): string[] => [...ranges]
  const ALNUM = chars('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789')
  const KEY = [...ALNUM, '_', '-']
  const BASE64 = [...ALNUM, '/', '+']
  const word = (unit: readonly string[], minLength: number, maxLength: number): fc.Arbitrary<string> =>
    fc.string({ unit: fc.constantFrom(...unit), minLength, maxLength })

  /** One secret in context: `before` + the secret + `after` stored as `before` + `label` + `after`. */
  interface Shape {
    readonly before: string
    readonly secret: string
    readonly after: string
    readonly label: string
  }
  const shape = (before: string, secret: string, after: string, label: string): Shape => ({
    before,
    secret,
    after,
    label,
  })

  // Key shapes after the providers' documented formats: Anthropic `sk-ant-api03-` (about 108
  // characters), OpenAI legacy `sk-` + 48, `sk-proj-` / `sk-svcacct-` / `sk-admin-` (about 165),
  // OpenRouter `sk-or-v1-` + 64 hex, and short `sk-` keys of 16 characters after the dash.
  const anthropic = fc
    .tuple(fc.constantFrom('api03-', 'admin01-', 'oat01-', ''), word(KEY, 8, 110))
    .map(([kind, body]) => shape('', `sk-ant-${kind}${body}`, '', 'anthropic-key'))
  const skKey = fc
    .tuple(
      fc.constantFrom('', 'proj-', 'svcacct-', 'admin-', 'None-', 'or-v1-'),
      fc.constantFrom(...ALNUM),
      word(KEY, 15, 170),
    )
    // `sk-a` + `nt-...` would be an Anthropic key, redacted under its own label.
    .filter(([kind, first]) => !(kind === '' && first === 'a'))
    .map(([kind, first, body]) => shape('', `sk-${kind}${first}${body}`, '', 'sk-key'))
  const awsSecret = fc
    .tuple(
      fc.constantFrom(
        ['aws_secret_access_key=', ''],
        ['AWS_SECRET_ACCESS_KEY=', ''],
        ['aws_secret_access_key = ', ''],
        ['AWS_SECRET_ACCESS_KEY="', '"'],
        ['"SecretAccessKey": "', '"'],
        ["secret-access-key: '", "'"],
      ),
      word(BASE64, 40, 40),
    )
    .map(([[name, close], secret]) => shape(name, secret, close, 'aws-secret-access-key'))
  const urlPassword = fc
    .tuple(
      fc.constantFrom('postgres', 'postgresql', 'mysql', 'redis', 'amqp', 'https', 'mongodb+srv', 'git+ssh'),
      word([...ALNUM, '.', '_', '-'], 0, 20),
      word([...ALNUM, '.', '_', '~', '!', '$', '&', '*', '+', ',', ';', '=', '%', ':', '@', '-'], 1, 40),
      word([...'abcdefghijklmnopqrstuvwxyz0123456789.-'], 1, 20),
      fc.constantFrom('', ':5432', ':5432/app', '/db?sslmode=require'),
    )
    .map(([scheme, userName, password, host, rest]) =>
      shape(`${scheme}://${userName}:`, password, `@${host}${rest}`, 'url-password'),
    )

  /** Text the policy leaves alone, around the secret; a separator keeps it from joining the secret. */
  const surrounding = fc
    .oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }))
    .filter((text) => DEFAULT_REDACTION_POLICY.redact(text) === text)
  // Characters no key, AWS secret or URL userinfo holds (a `(` or `,` may be part of a password).
  const separator = fc.constantFrom(' ', '\n', '\t', '"', '<', '>', '|', '`', '{', '}')

  it.each([
    ['anthropic-key', anthropic],
    ['sk-key', skKey],
    ['aws-secret-access-key', awsSecret],
    ['url-password', urlPassword],
  ] as const)('%s: the secret never survives, the text around it does', (_name, secrets) => {
    fc.assert(
      fc.property(
        surrounding,
        separator,
        secrets,
        separator,
        surrounding,
        (head, open, found, close, tail) => {
          const text = `${head}${open}${found.before}${found.secret}${found.after}${close}${tail}`
          const redacted = DEFAULT_REDACTION_POLICY.redact(text)
          expect(redacted).toBe(
            `${head}${open}${found.before}[REDACTED:${found.label}]${found.after}${close}${tail}`,
          )
        },
      ),
      { numRuns: 1000 },
    )
  })
})
