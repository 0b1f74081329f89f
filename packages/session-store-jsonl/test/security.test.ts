import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { fc, test as propertyTest } from '@fast-check/vitest'
import type { EventInput } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { assertSessionId, SessionStoreError } from '@agent-ledger/session-store'
import type { SessionStoreWarning } from '@agent-ledger/session-store'

import { nodeFsOps } from '../src/index.ts'
import { encodeEventLine, LOG_FILE_NAME } from '../src/format.ts'
import type { FsOps, JsonlStore } from '../src/index.ts'
import { createFaultFs } from './support/fault-fs.ts'
import {
  collect,
  coreTestStore,
  fileIdentity,
  makeTempDir,
  withHeaderId,
  writeCoreSession,
} from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }
let store: JsonlStore
let warnings: SessionStoreWarning[]

beforeEach(() => {
  temp = makeTempDir()
  ;({ store, warnings } = coreTestStore(temp.path))
})

afterEach(() => {
  temp.cleanup()
})

async function rejected(run: () => Promise<unknown>): Promise<SessionStoreError> {
  try {
    await run()
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

function thrown(run: () => unknown): SessionStoreError {
  try {
    run()
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

const mode = (path: string): number => statSync(path).mode & 0o777

function ignorable(data: unknown): EventInput {
  return { type: 'future/thing', data, ignorable: true } as unknown as EventInput
}

describe('security', () => {
  it('S1: directories are 0700 and files 0600 whatever the umask', async () => {
    const previous = process.umask()
    try {
      for (const umask of [0o000, 0o022, 0o077, 0o277]) {
        process.umask(umask)
        const root = join(temp.path, `umask-${umask.toString(8)}`, 'nested-root')
        const { store: scoped } = coreTestStore(root)
        const path = await writeCoreSession(scoped, 'perm', [
          { type: 'user/message', data: { message: { role: 'user', content: 'x' } } },
        ])
        appendFileSync(path, '{"torn')
        const writer = await scoped.openWriter('perm')
        await writer.close()
        expect(mode(root), `root, umask ${umask.toString(8)}`).toBe(0o700)
        expect(mode(join(root, '..')), `created parent, umask ${umask.toString(8)}`).toBe(0o700)
        expect(mode(join(root, 'perm'))).toBe(0o700)
        expect(mode(path)).toBe(0o600)
        const quarantined = writer.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail')
        expect(mode(join(root, quarantined!.quarantinedTo!))).toBe(0o600)
        for (const name of readdirSync(join(root, 'perm')))
          expect(mode(join(root, 'perm', name)), name).toBe(0o600)
      }
    } finally {
      process.umask(previous)
    }
  })

  it('S1: an existing 0644 log is set to 0600 with a warning when opened for write', async () => {
    const path = await writeCoreSession(store, 'wide', [])
    chmodSync(path, 0o644)
    const reader = await store.openReader('wide')
    expect(reader.header.id).toBe('wide')
    expect(mode(path)).toBe(0o644)
    const writer = await store.openWriter('wide')
    await writer.close()
    expect(mode(path)).toBe(0o600)
    // Reported with the writer's recovery (the JSONL store API logged a warning).
    expect(writer.recovery.backendRepairs).toContainEqual({
      kind: 'mode',
      description: `wide/${LOG_FILE_NAME} had mode 644; set to 600.`,
    })
    expect(warnings).toEqual([])
  })

  it('S1: a group- or world-writable root, or one owned by another uid, is UNSAFE_ROOT and refused', async () => {
    const open = join(temp.path, 'open-root')
    mkdirSync(open, { mode: 0o700 })
    chmodSync(open, 0o777)
    const wide = coreTestStore(open).store
    const error = await rejected(() => wide.create({ id: 'x' }))
    expect(error.code).toBe('UNSAFE_ROOT')
    expect(error.details).toMatchObject({ mode: '777' })
    expect(existsSync(join(open, 'x'))).toBe(false)
    expect((await rejected(() => wide.list())).code).toBe('UNSAFE_ROOT')
    if (process.getuid?.() === 0) {
      const foreign = join(temp.path, 'foreign-root')
      mkdirSync(foreign, { mode: 0o700 })
      chownSync(foreign, 65534, 65534)
      const error2 = await rejected(() => coreTestStore(foreign).store.openReader('x'))
      expect(error2.code).toBe('UNSAFE_ROOT')
      expect(error2.details).toMatchObject({ owner: 65534 })
    }
  })

  const hostileIds: unknown[] = [
    '..',
    '../x',
    'a/b',
    'a\\b',
    '/x/y',
    '%2e%2e',
    '.hidden',
    'a\0b',
    '',
    'a'.repeat(300),
    'CON',
    'nul',
    'com1',
    'x\u202e',
    'a\u2024b',
    '\u2024\u2024',
    'x\n',
    '-rf',
    ' x',
    'é',
    42,
    null,
    undefined,
  ]

  it('S2: hostile ids are rejected before any file-system call, with an escaped, bounded id', async () => {
    const spy = createFaultFs()
    const { store: spied } = coreTestStore(temp.path, { fs: spy })
    for (const id of hostileIds) {
      const attempts: (() => Promise<unknown>)[] = [
        () => spied.create({ id: id as string }),
        () => spied.openWriter(id as string),
        () => spied.openReader(id as string),
        () => collect(spied.readEvents(id as string)),
        () => spied.verify(id as string),
        () => spied.salvage(id as string, { to: 'fine' }),
        () => spied.salvage('fine', { to: id as string }),
        () => spied.fork(id as string, { to: 'fine', atSeq: 0 }),
        () => spied.fork('fine', { to: id as string, atSeq: 0 }),
        () => Promise.resolve(spied.backend.capabilities.files.sessionDirectory(id as string)),
      ]
      for (const attempt of attempts) {
        const error = await rejected(attempt)
        expect(error.code).toBe('INVALID_SESSION_ID')
        const shown = error.details['id'] as string
        expect(shown.length).toBeLessThanOrEqual(64)
        expect(shown).toMatch(/^[\x20-\x7e]*$/)
      }
    }
    expect(spy.calls).toEqual([])
  })

  propertyTest.prop([fc.string({ unit: 'binary', maxLength: 200 })], { numRuns: 500 })(
    'S2: any string either resolves to a direct child of the root or is rejected before any file-system call',
    async (id) => {
      const spy = createFaultFs()
      const { store: spied } = coreTestStore(temp.path, { fs: spy })
      let accepted = true
      try {
        assertSessionId(id)
      } catch {
        accepted = false
      }
      if (accepted) {
        const directory = spied.backend.capabilities.files.sessionDirectory(id)
        const inside = relative(resolve(temp.path), resolve(directory))
        expect(inside).toBe(id)
        expect(inside.includes('/') || inside.startsWith('..')).toBe(false)
      } else {
        expect((await rejected(() => spied.openReader(id))).code).toBe('INVALID_SESSION_ID')
        expect(spy.calls).toEqual([])
      }
    },
  )

  it('S3: __proto__, constructor and prototype keys are data: they round-trip byte-equal and pollute nothing', async () => {
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
    const hostile =
      '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"nested":[{"__proto__":{"polluted":true}}]}'
    const assistant = JSON.parse(
      `{"message":{"role":"assistant","content":"hi"},"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}`,
    ) as unknown
    const writer = await store.create({
      id: 'proto',
      header: { metadata: JSON.parse(hostile) as Record<string, unknown> },
    })
    const first = writer.append({ type: 'assistant/message', data: assistant } as EventInput)
    const second = writer.append(ignorable(JSON.parse(hostile)))
    writer.append({ type: 'tool/call', data: { callId: 'c', name: 'echo', arguments: hostile } })
    await writer.close()
    const expectedLines = [first, second].map((event) => encodeEventLine(event))
    const bytes = readFileSync(join(temp.path, 'proto', LOG_FILE_NAME))
    for (const line of expectedLines) expect(bytes.includes(line)).toBe(true)
    const events = await collect(store.readEvents('proto'))
    expect(Object.hasOwn(events[0]!.data as object, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(events[0]!.data)).toBe(Object.prototype)
    expect(JSON.stringify(events[1]!.data)).toBe(hostile)
    expect(encodeEventLine(events[1]!).equals(expectedLines[1]!)).toBe(true)
    const read = await store.openReader('proto')
    expect(Object.hasOwn(read.header.metadata!, '__proto__')).toBe(true)
    const child = await store.fork('proto', { to: 'proto-fork', atSeq: 2 })
    await child.close()
    await store.salvage('proto', { to: 'proto-salvage' })
    const forked = await collect(store.readEvents('proto-fork'))
    expect(JSON.stringify(forked[1]!.data)).toBe(hostile)
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    expect(({} as Record<string, unknown>)['x']).toBeUndefined()
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys)
  })

  it('S3: no source file builds objects from parsed data with Object.assign or a deep merge', () => {
    const source = fileURLToPath(new URL('../src', import.meta.url))
    const files: string[] = []
    const walk = (directory: string): void => {
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(directory, entry.name))
        else if (entry.name.endsWith('.ts')) files.push(join(directory, entry.name))
      }
    }
    walk(source)
    expect(files.length).toBeGreaterThan(5)
    for (const file of files) {
      const text = readFileSync(file, 'utf8')
      expect(text, file).not.toMatch(/Object\.assign\s*\(|\bdeepMerge\b|\bmergeDeep\b|lodash/)
    }
  })

  it('S5: a symlink at the log path is refused for write and read; the victim stays byte-identical', async () => {
    const victim = join(temp.path, 'victim.txt')
    writeFileSync(victim, 'precious\n')
    const other = await writeCoreSession(store, 'other', [])
    const targets: [string, string][] = [
      ['outside', victim],
      ['another-session', other],
      ['dangling', join(temp.path, 'nowhere')],
    ]
    for (const [name, target] of targets) {
      const directory = join(temp.path, `link-${name}`)
      mkdirSync(directory, { mode: 0o700 })
      symlinkSync(target, join(directory, LOG_FILE_NAME))
      const before = existsSync(target) ? fileIdentity(target) : null
      for (const attempt of [
        () => store.openWriter(`link-${name}`),
        () => store.openReader(`link-${name}`),
      ]) {
        const error = await rejected(attempt)
        expect(error.code, name).toBe('SYMLINK_REFUSED')
        expect(error.details).toMatchObject({ which: 'log' })
      }
      // create sees a name at the log path and refuses before it looks at what it is (the JSONL
      // store API said SYMLINK_REFUSED); either way nothing is followed or written.
      expect((await rejected(() => store.create({ id: `link-${name}` }))).code).toBe('SESSION_EXISTS')
      if (before !== null) expect(fileIdentity(target)).toEqual(before)
      expect(readdirSync(directory)).toEqual([LOG_FILE_NAME])
    }
    expect(readFileSync(victim, 'utf8')).toBe('precious\n')
  })

  it('S5: a symlink as the session directory or at the lock path is refused and never followed', async () => {
    const elsewhere = join(temp.path, 'elsewhere')
    mkdirSync(elsewhere, { mode: 0o700 })
    await writeCoreSession(coreTestStore(elsewhere).store, 'real', [])
    symlinkSync(join(elsewhere, 'real'), join(temp.path, 'alias'))
    for (const attempt of [
      () => store.openWriter('alias'),
      () => store.openReader('alias'),
      () => store.create({ id: 'alias' }),
    ]) {
      const error = await rejected(attempt)
      expect(error.code).toBe('SYMLINK_REFUSED')
      expect(error.details).toMatchObject({ which: 'session-directory' })
    }
    // writer.lease: the fencing epoch its own create left.
    expect(readdirSync(join(elsewhere, 'real')).sort()).toEqual([LOG_FILE_NAME, 'writer.lease'])
    await writeCoreSession(store, 'locked', [])
    const lockTarget = join(temp.path, 'lock-victim')
    writeFileSync(lockTarget, 'not a lock')
    symlinkSync(lockTarget, join(temp.path, 'locked', 'writer.lock'))
    const error = await rejected(() => store.openWriter('locked'))
    expect(error.code).toBe('SYMLINK_REFUSED')
    expect(readFileSync(lockTarget, 'utf8')).toBe('not a lock')
  })

  it('S6: a hard link to another file at the log path is HARDLINK_REFUSED and the other file is unchanged', async () => {
    const source = await writeCoreSession(store, 'source-session-for-the-hard-link', [
      { type: 'user/message', data: { message: { role: 'user', content: 'x' } } },
    ])
    const victim = join(temp.path, 'victim-session.jsonl')
    // The victim's header names 'hardlinked', so only the link count refuses it.
    writeFileSync(victim, withHeaderId(readFileSync(source), 'hardlinked'), { mode: 0o600 })
    const directory = join(temp.path, 'hardlinked')
    mkdirSync(directory, { mode: 0o700 })
    linkSync(victim, join(directory, LOG_FILE_NAME))
    const before = fileIdentity(victim)
    const error = await rejected(() => store.openWriter('hardlinked'))
    expect(error.code).toBe('HARDLINK_REFUSED')
    expect(error.details).toMatchObject({ nlink: 2 })
    expect(fileIdentity(victim)).toEqual(before)
    // The lease (the fencing epoch) is taken before the log is opened; no lock is left.
    expect(readdirSync(directory).sort()).toEqual([LOG_FILE_NAME, 'writer.lease'])
  })

  it('S7: temp names taken by an attacker at the moment of creation are redrawn with fresh randomness', async () => {
    const victim = join(temp.path, 'victim.txt')
    writeFileSync(victim, 'precious\n')
    let counter = 0
    const randomHex = (byteCount: number): string => (counter++).toString(16).padStart(byteCount * 2, '0')
    let attacks = 0
    const attacker: FsOps = {
      ...nodeFsOps,
      async open(path, flags, openMode) {
        // Races the store: plant a symlink or a file under the very temp name it is about to create.
        if (path.includes('.tmp-create-') && attacks < 4) {
          attacks += 1
          if (attacks % 2 === 0) symlinkSync(victim, path)
          else writeFileSync(path, 'attacker')
        }
        return nodeFsOps.open(path, flags, openMode)
      },
    }
    const { store: raced } = coreTestStore(temp.path, { fs: attacker, jsonl: { lock: { randomHex } } })
    const writer = await raced.create({ id: 'raced' })
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'safe' } } })
    await writer.close()
    expect(attacks).toBe(4)
    expect(readFileSync(victim, 'utf8')).toBe('precious\n')
    expect(await raced.verify('raced')).toMatchObject({ status: 'ok', lastSeq: 0 })
  })

  it('S8: default redaction keeps tokens out of the file, the quarantine and the projection; the CRC covers the redacted bytes', async () => {
    const secrets = [
      'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
      'AKIAIOSFODNN7EXAMPLE',
      'ghp_0123456789abcdefghijABCDEFGHIJ012345',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----',
      'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature',
    ]
    const writer = await store.create({ id: 'secret' })
    expect(writer.header).toMatchObject({ redaction: { policyVersion: expect.any(String) } })
    const appended = secrets.map((secret, index) =>
      writer.append({
        type: 'tool/call',
        data: {
          callId: `c${index}`,
          name: 'shell',
          arguments: JSON.stringify({ output: `value: ${secret} end` }),
        },
      }),
    )
    expect(appended.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4])
    await writer.close()
    const path = join(temp.path, 'secret', LOG_FILE_NAME)
    appendFileSync(path, readFileSync(path).subarray(-80, -10))
    const reopened = await store.openWriter('secret')
    await reopened.close()
    // Every file of the session: the log, the quarantine file, and any projection checkpoint.
    const names = readdirSync(join(temp.path, 'secret'))
    const quarantined = reopened.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail')
    expect(names).toEqual(
      expect.arrayContaining([LOG_FILE_NAME, quarantined!.quarantinedTo!.slice('secret/'.length)]),
    )
    const files = names.map((name) => readFileSync(join(temp.path, 'secret', name), 'latin1'))
    for (const content of files) {
      for (const token of [
        'sk-ant-api03',
        'AKIAIOSFODNN7EXAMPLE',
        'ghp_0123',
        'MIIEowIBAAKCAQEA7',
        'eyJhbGciOiJIUzI1NiJ9',
      ]) {
        expect(content.includes(token), token).toBe(false)
      }
    }
    expect(await store.verify('secret')).toMatchObject({ status: 'ok', lastSeq: 4 })
    const events = await collect(store.readEvents('secret'))
    expect((events[4]!.data as { arguments: string }).arguments).toContain('Bearer [REDACTED:bearer-token]')
  })

  it('S8: a redaction hook that throws or returns a non-string fails closed with REDACTION_FAILED; nothing is written', async () => {
    for (const [name, redact] of [
      [
        'throws',
        () => {
          throw new Error('hook broke')
        },
      ],
      ['non-string', () => 42 as unknown as string],
    ] as const) {
      const { store: hooked } = coreTestStore(temp.path, { redaction: { policyVersion: 'test-1', redact } })
      const writer = await hooked.create({ id: `hook-${name}` })
      const error = thrown(() =>
        writer.append({
          type: 'user/message',
          data: { message: { role: 'user', content: 'sk-ant-api03-plaintextsecret' } },
        }),
      )
      expect(error.code).toBe('REDACTION_FAILED')
      expect(writer.bufferedEvents).toBe(0)
      await writer.close()
      const content = readFileSync(join(temp.path, `hook-${name}`, LOG_FILE_NAME), 'utf8')
      expect(content).not.toContain('plaintextsecret')
      expect(content).toContain('"policyVersion":"test-1"')
    }
  })

  it('S9: hostile shapes through append are typed errors, synchronous, with nothing buffered and no RangeError', async () => {
    const { store: limited } = coreTestStore(temp.path, { limits: { maxEntries: 100_000 } })
    const writer = await limited.create({ id: 'shapes' })
    let deep: unknown = 0
    for (let index = 0; index < 100_000; index += 1) deep = [deep]
    const wide: Record<string, number> = {}
    for (let index = 0; index < 200_001; index += 1) wide[`k${index}`] = index
    const long = new Array<number>(1_000_000).fill(7)
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic['self'] = cyclic
    const cases: [unknown, string][] = [
      [deep, 'TOO_DEEP'],
      [wide, 'EVENT_TOO_LARGE'],
      [long, 'EVENT_TOO_LARGE'],
      [cyclic, 'UNSERIALIZABLE_EVENT'],
      [{ big: 10n }, 'UNSERIALIZABLE_EVENT'],
      [[1, undefined], 'UNSERIALIZABLE_EVENT'],
      [{ value: Number.NaN }, 'UNSERIALIZABLE_EVENT'],
      [{ when: new Date(0) }, 'UNSERIALIZABLE_EVENT'],
    ]
    for (const [data, code] of cases) {
      const error = thrown(() => writer.append(ignorable(data)))
      expect(error.code).toBe(code)
      expect(writer.bufferedEvents).toBe(0)
      expect(writer.projection.nextSeq).toBe(0)
    }
    const kept = writer.append(ignorable({ dropped: undefined, kept: 1 }))
    expect(kept.data).toEqual({ kept: 1 })
    await writer.close()
    expect((await collect(limited.readEvents('shapes'))).map((event) => event.data)).toEqual([{ kept: 1 }])
  })
})
