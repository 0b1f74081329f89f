/**
 * The CLI over encrypted stores (issue 27 item 2): the key file and key store from the
 * environment, reads decrypt (cat, export), verify needs no key, copy keeps the sealed lines
 * (the copy reads with the same key store), fork seals the child, `rekey` rotates.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createEncryption, fileKeyStore, keyFileProvider } from '@agent-ledger/encryption'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, logPath, makeRoot, writeSession } from './support/sessions.ts'

const synthetic = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'import', 'test', 'fixtures')
const keyLine = (id: string): string => `${id}:${randomBytes(32).toString('base64')}\n`

describe('agent-ledger over an encrypted store', () => {
  let dir: { root: string; cleanup: () => void }
  let root = ''
  let env: Record<string, string> = {}
  beforeEach(async () => {
    dir = makeRoot('al-cli-enc-')
    root = join(dir.root, 'store')
    writeFileSync(join(dir.root, 'keys'), keyLine('k1'), { mode: 0o600 })
    env = {
      AGENT_LEDGER_KEY_FILE: join(dir.root, 'keys'),
      AGENT_LEDGER_KEY_STORE: join(dir.root, 'key-store'),
    }
    const store = createJsonlStore({
      root,
      encryption: createEncryption({
        keys: keyFileProvider(env['AGENT_LEDGER_KEY_FILE']!),
        keyStore: fileKeyStore(env['AGENT_LEDGER_KEY_STORE']!),
      }),
    })
    await writeSession(store, 'a1')
    await store.close()
  })
  afterEach(() => dir.cleanup())

  it('compact seals its events: the summary reads back with the keys and is not in the log', async () => {
    const run = await cli(
      ['compact', join(root, 'a1'), '--from', '2', '--to', '6', '--summary', 'Summary of the sealed turn.'],
      { env },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const messages = await cli(['messages', join(root, 'a1'), '--json'], { env })
    expect(messages.code).toBe(0)
    expect(messages.stdout).toContain('Summary of the sealed turn.')
    expect(messages.stdout).not.toContain('Please read file 1.')
    expect(readFileSync(logPath(root, 'a1'), 'utf8')).not.toContain('Summary of the sealed turn')
    expect((await cli(['verify', join(root, 'a1')], { env: {} })).code).toBe(0)
  })

  it('search decrypts with the keys; without them the session is reported unsearched (stderr and --json), exit 0', async () => {
    const found = await cli(['search', 'coding agent', '--store', root, '--json'], { env })
    expect(found.code).toBe(0)
    const withKeys = JSON.parse(found.stdout) as { hits: { sessionId: string }[]; unsearched: unknown[] }
    expect(withKeys.hits.length).toBeGreaterThan(0)
    expect(withKeys.hits.every((hit) => hit.sessionId === 'a1')).toBe(true)
    expect(withKeys.unsearched).toEqual([])
    const keyless = await cli(['search', 'coding agent', '--store', root], { env: {} })
    expect(keyless.code).toBe(0)
    expect(keyless.stdout).toContain('0 hits')
    expect(keyless.stderr).toContain('session a1 is encrypted under key k1')
    const keylessJson = await cli(['search', 'coding agent', '--store', root, '--json'], { env: {} })
    expect(JSON.parse(keylessJson.stdout)).toMatchObject({
      hits: [],
      unsearched: [{ sessionId: 'a1', code: 'KEY_UNAVAILABLE', keyId: 'k1' }],
    })
  })

  it('cat and export decrypt with the keys; without them KEY_UNAVAILABLE names the key; verify needs none', async () => {
    expect(readFileSync(logPath(root, 'a1'), 'utf8')).not.toContain('coding agent')
    const cat = await cli(['cat', join(root, 'a1')], { env })
    expect(cat.code).toBe(0)
    expect(cat.stdout).toContain('coding agent')
    const exported = await cli(['export', join(root, 'a1'), '--format', 'md'], { env })
    expect(exported.code).toBe(0)
    expect(exported.stdout).toContain('coding agent')
    const keyless = await cli(['cat', join(root, 'a1')], { env: {} })
    expect(keyless.code).not.toBe(0)
    expect(keyless.stderr).toContain('KEY_UNAVAILABLE')
    expect(keyless.stderr).toContain('k1')
    const verified = await cli(['verify', join(root, 'a1'), '--json'], { env: {} })
    expect(verified.code).toBe(0)
    expect(JSON.parse(verified.stdout)).toMatchObject({ status: 'ok', sealed: { keyId: 'k1' } })
  })

  it('fork seals the child under its own data key; copy keeps the sealed lines readable with the key store', async () => {
    const fork = await cli(['fork', join(root, 'a1'), '--at', '3', '--id', 'a2'], { env })
    expect(fork.code).toBe(0)
    const child = readFileSync(logPath(root, 'a2'), 'utf8')
    expect(child).not.toContain('coding agent')
    expect(JSON.parse(child.split('\n')[0]!).encryption.dataKeyId).not.toBe(
      JSON.parse(readFileSync(logPath(root, 'a1'), 'utf8').split('\n')[0]!).encryption.dataKeyId,
    )
    const to = join(dir.root, 'copy')
    const copy = await cli(['copy', root, to], { env })
    expect(copy.code).toBe(0)
    expect(readFileSync(logPath(to, 'a1'), 'utf8')).toBe(readFileSync(logPath(root, 'a1'), 'utf8'))
    expect((await cli(['cat', join(to, 'a2')], { env })).stdout).toContain('coding agent')
  })

  it('import seals what it imports; export reads it back decrypted', async () => {
    const imported = await cli(
      ['import', join(synthetic, 'codex', 'compacted.jsonl'), '--root', root, '--json'],
      {
        env,
      },
    )
    expect(imported.code).toBe(0)
    const ids = readdirSync(root).filter((name) => name !== 'a1' && !name.startsWith('.'))
    expect(ids).toHaveLength(1)
    const log = readFileSync(logPath(root, ids[0]!), 'utf8').trimEnd().split('\n')
    expect(JSON.parse(log[0]!).encryption.keyId).toBe('k1')
    for (const line of log.slice(1))
      expect(Object.keys(JSON.parse(line) as object)).toEqual(['seq', 'time', 'type', 'enc', 'crc'])
    const exported = await cli(['export', join(root, ids[0]!), '--format', 'md'], { env })
    expect(exported.code).toBe(0)
    expect(exported.stdout.length).toBeGreaterThan(200)
    expect((await cli(['export', join(root, ids[0]!), '--format', 'md'], { env: {} })).stderr).toContain(
      'KEY_UNAVAILABLE',
    )
  })

  it('rekey re-wraps every data key under the new current key; the old key can then be retired', async () => {
    const k1 = readFileSync(env['AGENT_LEDGER_KEY_FILE']!, 'utf8')
    const k2 = keyLine('k2')
    writeFileSync(env['AGENT_LEDGER_KEY_FILE']!, k2 + k1)
    const before = readFileSync(logPath(root, 'a1'), 'utf8')
    const rekey = await cli(['rekey', '--json'], { env })
    expect(rekey.code).toBe(0)
    expect(JSON.parse(rekey.stdout)).toEqual({ rewrapped: 1, current: 0, unavailable: [] })
    expect(readFileSync(logPath(root, 'a1'), 'utf8')).toBe(before)
    writeFileSync(env['AGENT_LEDGER_KEY_FILE']!, k2)
    expect((await cli(['cat', join(root, 'a1')], { env })).stdout).toContain('coding agent')
  })
})
