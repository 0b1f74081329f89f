/**
 * Encryption at rest on a JSONL root (issue 27 item 2): what is stored, reads without the key,
 * tampering, erase by key across a copied log, rotation and rekey, verify without keys, forks.
 */
import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { crc32c, SessionStoreError } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { createEncryption, fileKeyStore, localKeyProvider } from '../src/index.ts'
import type { KeyStore, StoreEncryption } from '../src/index.ts'

const LOG = 'session.v4.jsonl'
const key = (id: string): string => `${id}:${randomBytes(32).toString('base64')}`
const SECRET = 'the quarterly numbers are 4711'

let dir = ''
let root = ''
let keyStore: KeyStore
const open: SessionStore[] = []

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'al-enc-'))
  root = join(dir, 'root')
  keyStore = fileKeyStore(join(dir, 'keys'))
})
afterEach(async () => {
  for (const store of open.splice(0)) await store.close()
  await rm(dir, { recursive: true, force: true })
})

function store(encryption: StoreEncryption | undefined, at = root): SessionStore {
  const made = createJsonlStore({
    root: at,
    redaction: null,
    ...(encryption === undefined ? {} : { encryption }),
  })
  open.push(made)
  return made
}

function encryptionWith(keys: string): StoreEncryption {
  return createEncryption({ keys: localKeyProvider(keys), keyStore })
}

async function writeSession(target: SessionStore, id: string): Promise<void> {
  const writer = await target.create({ id, header: { cwd: '/srv/project' } })
  writer.append({ type: 'turn/start', data: { turn: 1 } })
  writer.append({ type: 'user/message', data: { message: { role: 'user', content: SECRET } } })
  writer.append({ type: 'assistant/message', data: { message: { role: 'assistant', content: 'noted' } } })
  writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await writer.close()
}

async function contents(target: SessionStore, id: string): Promise<unknown[]> {
  const found: unknown[] = []
  for await (const event of target.readEvents(id)) found.push(event.data)
  return found
}

async function rejection(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a rejection')
}

/** Rewrites one line of a log, its crc recomputed (what an attacker with write access can do). */
function withCrc(body: string): string {
  const crc = (crc32c(Buffer.from(body, 'utf8')) >>> 0).toString(16).padStart(8, '0')
  return `${body},"crc":"${crc}"}`
}

describe('encrypted JSONL sessions', () => {
  it('store only seq, time, type and sealed data; read back with the key', async () => {
    const s = store(encryptionWith(key('k1')))
    await writeSession(s, 'a')
    const text = await readFile(join(root, 'a', LOG), 'utf8')
    expect(text).not.toContain('quarterly')
    const [header, ...lines] = text.trimEnd().split('\n')
    expect(JSON.parse(header!).encryption).toMatchObject({ scheme: 'aes-256-gcm', keyId: 'k1' })
    for (const line of lines)
      expect(Object.keys(JSON.parse(line) as object)).toEqual(['seq', 'time', 'type', 'enc', 'crc'])
    expect((await contents(s, 'a'))[1]).toEqual({ message: { role: 'user', content: SECRET } })
    const reader = await s.openReader('a')
    expect(reader.lastSeq).toBe(3)
  })

  it('a read without the key is KEY_UNAVAILABLE naming the key id; verify still checks integrity', async () => {
    await writeSession(store(encryptionWith(key('k1'))), 'a')
    for (const other of [undefined, encryptionWith(key('k2'))]) {
      const s = store(other)
      const error = await rejection(s.openReader('a'))
      expect(error.code).toBe('KEY_UNAVAILABLE')
      expect(error.details['keyId']).toBe('k1')
      expect(error.message).toContain('k1')
      expect((await rejection(contents(s, 'a'))).code).toBe('KEY_UNAVAILABLE')
      const report = await s.verify('a')
      expect(report.status).toBe('ok')
      expect(report.events).toBe(4)
      expect(report.sealed?.keyId).toBe('k1')
    }
  })

  it('tampered ciphertext: the checksum catches it, and with the checksum fixed the AEAD tag does', async () => {
    const s = store(encryptionWith(key('k1')))
    await writeSession(s, 'a')
    const file = join(root, 'a', LOG)
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n')
    const event = JSON.parse(lines[2]!) as { enc: string }
    const flipped = event.enc.slice(0, 10) + (event.enc[10] === 'A' ? 'B' : 'A') + event.enc.slice(11)
    const tampered = lines[2]!.replace(event.enc, flipped)
    await writeFile(file, [...lines.slice(0, 2), tampered, ...lines.slice(3)].join('\n') + '\n')
    const byCrc = await s.verify('a')
    expect(byCrc.status).toBe('damaged')
    expect(byCrc.damage?.details['reason']).toBe('checksum')
    // The same flip with a valid checksum: only the tag can tell.
    const fixed = withCrc(tampered.slice(0, tampered.lastIndexOf(',"crc":')))
    await writeFile(file, [...lines.slice(0, 2), fixed, ...lines.slice(3)].join('\n') + '\n')
    const byTag = await rejection(s.openReader('a'))
    expect(byTag.code).toBe('CORRUPT_LINE')
    expect(byTag.details['reason']).toBe('auth-tag')
    expect(byTag.seq).toBe(1)
    // Keyless verify sees a well-formed line: the checksum matches what is stored.
    expect((await store(undefined).verify('a')).status).toBe('ok')
  })

  it('a line moved to another seq does not open (the AAD binds session, seq, time and type)', async () => {
    const s = store(encryptionWith(key('k1')))
    await writeSession(s, 'a')
    const file = join(root, 'a', LOG)
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n')
    // Line of seq 1 (user/message) given seq 2's position and seq, its checksum recomputed.
    const moved = JSON.parse(lines[2]!) as Record<string, unknown>
    const body = `{"seq":2,"time":${JSON.stringify(moved['time'])},"type":"user/message","enc":"${String(moved['enc'])}"`
    await writeFile(file, [...lines.slice(0, 3), withCrc(body), ...lines.slice(4)].join('\n') + '\n')
    const error = await rejection(s.openReader('a'))
    expect(error.code).toBe('CORRUPT_LINE')
    expect(error.details['reason']).toBe('auth-tag')
    expect(error.seq).toBe(2)
  })

  it('erase by key: a copied log (another root) becomes unreadable with the original once the key is erased', async () => {
    const encryption = encryptionWith(key('k1'))
    const s = store(encryption)
    await writeSession(s, 'a')
    const copyRoot = join(dir, 'backup')
    await cp(root, copyRoot, { recursive: true })
    const backup = store(encryption, copyRoot)
    expect(await contents(backup, 'a')).toEqual(await contents(s, 'a'))
    const header = JSON.parse((await readFile(join(root, 'a', LOG), 'utf8')).split('\n')[0]!) as {
      encryption: { dataKeyId: string }
    }
    expect(await encryption.erase(header.encryption.dataKeyId)).toBe(true)
    for (const where of [s, backup, store(encryption, copyRoot)]) {
      const error = await rejection(where.openReader('a'))
      expect(error.code).toBe('KEY_UNAVAILABLE')
      expect(error.details['reason']).toBe('erased')
      expect((await where.verify('a')).status).toBe('ok')
    }
    expect(await readFile(join(copyRoot, 'a', LOG), 'utf8')).not.toContain('quarterly')
  })

  it('forks hold their own data key: erasing the parent key leaves the fork readable', async () => {
    const encryption = encryptionWith(key('k1'))
    const s = store(encryption)
    await writeSession(s, 'a')
    await (await s.fork('a', { to: 'b', atSeq: 3 })).close()
    const parent = await contents(s, 'a')
    expect((await contents(s, 'b')).slice(0, 4)).toEqual(parent)
    const dataKeyOf = async (id: string): Promise<string> =>
      (
        JSON.parse((await readFile(join(root, id, LOG), 'utf8')).split('\n')[0]!) as {
          encryption: { dataKeyId: string }
        }
      ).encryption.dataKeyId
    expect(await dataKeyOf('b')).not.toBe(await dataKeyOf('a'))
    await encryption.erase(await dataKeyOf('a'))
    expect((await rejection(s.openReader('a'))).code).toBe('KEY_UNAVAILABLE')
    expect((await contents(s, 'b')).slice(0, 4)).toEqual(parent)
  })

  it('rotation: new sessions use the new key, old ones read with the old; rekey re-wraps without touching logs', async () => {
    const k1 = key('k1')
    const k2 = key('k2')
    await writeSession(store(encryptionWith(k1)), 'old')
    const rotated = encryptionWith(`${k2}\n${k1}`)
    const s = store(rotated)
    await writeSession(s, 'new')
    const headerOf = async (id: string): Promise<{ keyId: string }> =>
      (
        JSON.parse((await readFile(join(root, id, LOG), 'utf8')).split('\n')[0]!) as {
          encryption: { keyId: string }
        }
      ).encryption
    expect((await headerOf('new')).keyId).toBe('k2')
    expect((await contents(s, 'old'))[1]).toEqual({ message: { role: 'user', content: SECRET } })
    // Without k1, the old session is unreadable, naming k1.
    const k2Only = store(encryptionWith(k2))
    expect((await rejection(k2Only.openReader('old'))).details['keyId']).toBe('k1')
    const before = await readFile(join(root, 'old', LOG), 'utf8')
    expect(await rotated.rekey()).toEqual({ rewrapped: 1, current: 1, unavailable: [] })
    expect(await readFile(join(root, 'old', LOG), 'utf8')).toBe(before)
    // After the rekey k1 can be retired: k2 alone reads both.
    const retired = store(encryptionWith(k2))
    expect((await contents(retired, 'old'))[1]).toEqual({ message: { role: 'user', content: SECRET } })
    expect((await contents(retired, 'new'))[1]).toEqual({ message: { role: 'user', content: SECRET } })
  })

  it('a plain session stays plain and readable in an encrypting store, and appends to it stay plain', async () => {
    await writeSession(store(undefined), 'plain')
    const s = store(encryptionWith(key('k1')))
    const writer = await s.openWriter('plain')
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'more' } } })
    await writer.close()
    const text = await readFile(join(root, 'plain', LOG), 'utf8')
    expect(text).toContain('"content":"more"')
    expect(text).not.toContain('"enc"')
    expect(await contents(s, 'plain')).toHaveLength(5)
  })

  it('compress (zstd frames) keeps an encrypted session sealed and readable; the frames hold the same lines', async () => {
    const encryption = encryptionWith(key('k1'))
    const s = store(encryption)
    await writeSession(s, 'a')
    const before = await readFile(join(root, 'a', LOG), 'utf8')
    const plainEvents = await contents(s, 'a')
    const compress = s.backend.capabilities.compress
    expect((await compress!.compress('a')).changed).toBe(true)
    expect(await contents(store(encryption), 'a')).toEqual(plainEvents)
    const lines: string[] = []
    for await (const stored of s.backend.read('a', { fromSeq: 0 })) lines.push(stored.line)
    expect(lines).toEqual(before.trimEnd().split('\n').slice(1))
    expect((await store(undefined).verify('a')).status).toBe('ok')
  })

  it('salvage of a damaged encrypted session seals the good prefix under a new data key', async () => {
    const encryption = encryptionWith(key('k1'))
    const s = store(encryption)
    await writeSession(s, 'a')
    const file = join(root, 'a', LOG)
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n')
    await writeFile(
      file,
      [...lines.slice(0, 3), lines[3]!.replace('"crc":"', '"crc":"0'), lines[4]].join('\n') + '\n',
    )
    const report = await s.salvage('a', { to: 'b' })
    expect(report.copiedEvents).toBe(2)
    const salvaged = await contents(s, 'b')
    expect(salvaged.slice(0, 2)).toEqual([{ turn: 1 }, { message: { role: 'user', content: SECRET } }])
    const text = await readFile(join(root, 'b', LOG), 'utf8')
    expect(text).not.toContain('quarterly')
    expect(JSON.parse(text.split('\n')[0]!).encryption.dataKeyId).not.toBe(
      JSON.parse(lines[0]!).encryption.dataKeyId,
    )
  })

  it("a caller's async KMS wrap/unwrap: the wrapping key never reaches the key store; an unwrap failure is KEY_UNAVAILABLE", async () => {
    const inner = localKeyProvider(key('kms-1'))
    let unwraps = 0
    let failing = false
    const kms = {
      currentKeyId: 'kms-1',
      has: (keyId: string) => keyId === 'kms-1',
      wrap: async (keyId: string, dataKey: Uint8Array, context: { dataKeyId: string; sessionId: string }) =>
        `kms:${await inner.wrap(keyId, dataKey, context)}`,
      unwrap: async (keyId: string, wrapped: string, context: { dataKeyId: string; sessionId: string }) => {
        unwraps += 1
        if (failing) throw new Error('KMS: access denied')
        return await inner.unwrap(keyId, wrapped.slice('kms:'.length), context)
      },
    }
    const encryption = createEncryption({ keys: kms, keyStore })
    await writeSession(store(encryption), 'a')
    const records = []
    for await (const record of keyStore.list()) records.push(record)
    expect(records).toHaveLength(1)
    expect(records[0]!.wrapped.startsWith('kms:')).toBe(true)
    expect((await contents(store(encryption), 'a'))[1]).toEqual({
      message: { role: 'user', content: SECRET },
    })
    expect(unwraps).toBe(1)
    failing = true
    const error = await rejection(store(encryption).openReader('a'))
    expect(error.code).toBe('KEY_UNAVAILABLE')
    expect(error.details['reason']).toBe('unwrap-failed')
    expect(error.message).toContain('access denied')
  })

  it('appending to an encrypted session after a reopen seals the new events under the same key', async () => {
    const encryption = encryptionWith(key('k1'))
    await writeSession(store(encryption), 'a')
    const s = store(encryption)
    const writer = await s.openWriter('a')
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'second secret' } } })
    await writer.close()
    expect(await readFile(join(root, 'a', LOG), 'utf8')).not.toContain('second secret')
    expect((await contents(store(encryption), 'a'))[4]).toEqual({
      message: { role: 'user', content: 'second secret' },
    })
  })

  it('search opens encrypted sessions with the key; without it (or once erased) they are reported unsearched, never silently missed', async () => {
    const encryption = encryptionWith(key('k1'))
    await writeSession(store(encryption), 'a')
    await writeSession(store(undefined), 'b')
    const withKey = await store(encryption).search('quarterly numbers')
    expect(withKey.hits.map((hit) => [hit.sessionId, hit.seq, hit.field])).toEqual([
      ['a', 1, 'text'],
      ['b', 1, 'text'],
    ])
    expect(withKey.unsearched).toBeUndefined()
    const keyless = await store(undefined).search('quarterly numbers')
    expect(keyless.hits.map((hit) => hit.sessionId)).toEqual(['b'])
    expect(keyless.unsearched).toEqual([{ sessionId: 'a', code: 'KEY_UNAVAILABLE', keyId: 'k1' }])
    const header = JSON.parse((await readFile(join(root, 'a', LOG), 'utf8')).split('\n')[0]!) as {
      encryption: { dataKeyId: string }
    }
    expect(await encryption.erase(header.encryption.dataKeyId)).toBe(true)
    const erased = await store(encryption).search('quarterly')
    expect(erased.hits.map((hit) => hit.sessionId)).toEqual(['b'])
    expect(erased.unsearched).toEqual([{ sessionId: 'a', code: 'KEY_UNAVAILABLE', keyId: 'k1' }])
  })
})
