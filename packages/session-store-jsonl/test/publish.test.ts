import { createHash } from 'node:crypto'
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import type { FsOps } from '../src/fs-ops.ts'
import { JsonlErrorCode, JsonlStoreError } from '../src/jsonl-store-error.ts'
import { PUBLISH_POINTS } from '../src/publish-checks.ts'
import type { PublishRequest } from '../src/publish-checks.ts'
import { publishFile, removeStaleTemps } from '../src/publish.ts'
import { createFaultFs } from './support/fault-fs.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-publish-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let counter = 0

function directory(): string {
  counter += 1
  const path = join(scratch, `d${counter}`)
  mkdirSync(path, { mode: 0o700 })
  return path
}

const CONTENT = Buffer.from(
  Array.from({ length: 300 }, (_, index) => `line ${index} ${'x'.repeat(index % 17)}\n`).join(''),
)

function sha(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** Content in small pieces, so batching is exercised. */
function pieces(bytes: Buffer = CONTENT, size = 97): () => AsyncIterable<Uint8Array> {
  return async function* content() {
    await Promise.resolve()
    for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size)
  }
}

/** An FsOps that counts rename calls (the protocol must never rename). */
function counting(inner: FsOps = nodeFsOps): FsOps & { renames: number } {
  const fs = { ...inner, renames: 0 }
  fs.rename = async (from, to) => {
    fs.renames += 1
    return inner.rename(from, to)
  }
  return fs
}

function request(dir: string, overrides: Partial<PublishRequest> = {}): PublishRequest {
  return {
    fs: nodeFsOps,
    directory: dir,
    target: 'session.v4.jsonl',
    kind: 'migrate',
    content: pieces(),
    chunkBytes: 256,
    ...overrides,
  }
}

async function failure(promise: Promise<unknown>): Promise<JsonlStoreError> {
  try {
    await promise
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a typed error')
}

function temps(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith('.tmp-'))
}

describe('publishFile', () => {
  it('publishes the exact bytes by link, with mode 0600, one link, no temp left, passing every point in order', async () => {
    const dir = directory()
    const fs = counting()
    const points: string[] = []
    const result = await publishFile(request(dir, { fs, hooks: { at: (point) => void points.push(point) } }))
    const path = join(dir, 'session.v4.jsonl')
    expect(readFileSync(path)).toEqual(CONTENT)
    expect(result).toMatchObject({
      outcome: 'published',
      file: 'session.v4.jsonl',
      size: CONTENT.length,
      sha256: sha(CONTENT),
      handle: null,
    })
    expect(result.tempFile).toMatch(/^\.tmp-migrate-[0-9a-f]{16}$/)
    const stats = statSync(path)
    expect(stats.mode & 0o777).toBe(0o600)
    expect(stats.nlink).toBe(1)
    expect(stats.ino).toBe(result.ino)
    expect(temps(dir)).toEqual([])
    expect(points).toEqual([...PUBLISH_POINTS])
    expect(fs.renames).toBe(0)
  })

  it('with replace, renames the verified temp over an existing target (the reseal) and leaves no temp', async () => {
    const dir = directory()
    const fs = counting()
    writeFileSync(join(dir, 'session.v4.jsonl'), 'old content\n', { mode: 0o600 })
    const points: string[] = []
    const result = await publishFile(
      request(dir, { fs, replace: true, hooks: { at: (point) => void points.push(point) } }),
    )
    const stats = statSync(join(dir, 'session.v4.jsonl'))
    expect(readFileSync(join(dir, 'session.v4.jsonl'))).toEqual(CONTENT)
    expect(result).toMatchObject({ outcome: 'published', size: CONTENT.length, sha256: sha(CONTENT) })
    expect([stats.ino, stats.nlink, stats.mode & 0o777]).toEqual([result.ino, 1, 0o600])
    expect(fs.renames).toBe(1)
    expect(temps(dir)).toEqual([])
    expect(points).toEqual([
      'temp-created',
      'temp-written',
      'temp-synced',
      'verified',
      'renamed',
      'dir-synced',
    ])
  })

  it('S1: gives the file mode 0600 whatever the umask', async () => {
    for (const umask of [0o000, 0o022, 0o277]) {
      const previous = process.umask(umask)
      try {
        const dir = directory()
        await publishFile(request(dir))
        expect(statSync(join(dir, 'session.v4.jsonl')).mode & 0o777).toBe(0o600)
      } finally {
        process.umask(previous)
      }
    }
  })

  it('hands the verifier the staged bytes, read back from disk', async () => {
    const dir = directory()
    const seen: Buffer[] = []
    await publishFile(
      request(dir, {
        verify: async (staged) => {
          for await (const chunk of staged) seen.push(Buffer.from(chunk))
        },
      }),
    )
    expect(Buffer.concat(seen)).toEqual(CONTENT)
  })

  it('still reads and hashes what a verifier that stops early did not consume', async () => {
    const dir = directory()
    let first: Buffer | undefined
    await publishFile(
      request(dir, {
        verify: async (staged) => {
          for await (const chunk of staged) {
            first = Buffer.from(chunk)
            break
          }
        },
      }),
    )
    expect(first).toEqual(CONTENT.subarray(0, 256))
    expect(readFileSync(join(dir, 'session.v4.jsonl'))).toEqual(CONTENT)
  })

  it('keeps the read-write handle of the published inode with keepHandle', async () => {
    const dir = directory()
    const result = await publishFile(request(dir, { keepHandle: true }))
    try {
      expect((await result.handle!.stat()).ino).toBe(lstatSync(join(dir, 'session.v4.jsonl')).ino)
      await result.handle!.write(Buffer.from('more\n'), result.size)
    } finally {
      await result.handle!.close()
    }
    expect(readFileSync(join(dir, 'session.v4.jsonl')).subarray(CONTENT.length).toString()).toBe('more\n')
  })

  it('V4: accepts a target another process already published when it begins with exactly our bytes, and drops ours', async () => {
    const dir = directory()
    const path = join(dir, 'session.v4.jsonl')
    const theirs = Buffer.concat([CONTENT, Buffer.from('appended by the winner\n')])
    writeFileSync(path, theirs, { mode: 0o600 })
    const before = statSync(path)
    const fs = counting()
    const result = await publishFile(request(dir, { fs }))
    expect(result).toMatchObject({
      outcome: 'already-published',
      size: CONTENT.length,
      sha256: sha(CONTENT),
      ino: before.ino,
      handle: null,
    })
    expect(readFileSync(path)).toEqual(theirs)
    expect(statSync(path).mtimeMs).toBe(before.mtimeMs)
    expect(temps(dir)).toEqual([])
    expect(fs.renames).toBe(0)
  })

  it('refuses a target whose bytes differ with MIGRATION_CONFLICT at the first differing offset, leaving it untouched', async () => {
    const dir = directory()
    const path = join(dir, 'session.v4.jsonl')
    const theirs = Buffer.from(CONTENT)
    theirs[1000] = 0x21
    writeFileSync(path, theirs)
    const error = await failure(publishFile(request(dir)))
    expect(error.code).toBe('MIGRATION_CONFLICT')
    expect(error.details).toMatchObject({ reason: 'different-bytes', firstDifferenceOffset: 1000 })
    expect(readFileSync(path)).toEqual(theirs)
    expect(temps(dir)).toEqual([])
  })

  it('refuses a shorter existing target (a prefix of ours) as a conflict at its end', async () => {
    const dir = directory()
    writeFileSync(join(dir, 'session.v4.jsonl'), CONTENT.subarray(0, 500))
    const error = await failure(publishFile(request(dir)))
    expect(error.details).toMatchObject({ reason: 'different-bytes', firstDifferenceOffset: 500 })
  })

  it('refuses any existing target with ifExists "refuse" (the create path)', async () => {
    const dir = directory()
    writeFileSync(join(dir, 'session.v4.jsonl'), CONTENT)
    const error = await failure(publishFile(request(dir, { ifExists: 'refuse' })))
    expect(error).toMatchObject({ code: 'MIGRATION_CONFLICT', details: { reason: 'exists' } })
    expect(temps(dir)).toEqual([])
  })

  it('S5: refuses a symbolic link at the target with SYMLINK_REFUSED, never writing through it', async () => {
    const dir = directory()
    const victim = join(scratch, `victim-${counter}`)
    writeFileSync(victim, 'victim\n')
    symlinkSync(victim, join(dir, 'session.v4.jsonl'))
    const error = await failure(publishFile(request(dir)))
    expect(error.code).toBe(JsonlErrorCode.SYMLINK_REFUSED)
    expect(readFileSync(victim, 'utf8')).toBe('victim\n')
    expect(temps(dir)).toEqual([])
  })

  it('S7: skips temp names an attacker pre-created (as files and symlinks) and still publishes', async () => {
    const dir = directory()
    const victim = join(scratch, `victim-s7-${counter}`)
    writeFileSync(victim, 'victim\n')
    const names = ['00000000000000aa', '00000000000000bb', '00000000000000cc', '00000000000000dd']
    writeFileSync(join(dir, `.tmp-migrate-${names[0]}`), 'planted')
    symlinkSync(victim, join(dir, `.tmp-migrate-${names[1]}`))
    symlinkSync(join(dir, 'dangling'), join(dir, `.tmp-migrate-${names[2]}`))
    let next = 0
    const result = await publishFile(request(dir, { randomHex: () => names[next++]! }))
    expect(result.tempFile).toBe(`.tmp-migrate-${names[3]}`)
    expect(readFileSync(join(dir, 'session.v4.jsonl'))).toEqual(CONTENT)
    expect(readFileSync(victim, 'utf8')).toBe('victim\n')
    expect(readFileSync(join(dir, `.tmp-migrate-${names[0]}`), 'utf8')).toBe('planted')
    expect(existsSync(join(dir, 'dangling'))).toBe(false)
  })

  it('S7: gives up with MIGRATION_FAILED{step:create-temp, cause:EEXIST} when every name it draws is taken', async () => {
    const dir = directory()
    writeFileSync(join(dir, '.tmp-migrate-0000000000000000'), 'planted')
    const error = await failure(publishFile(request(dir, { randomHex: () => '0000000000000000' })))
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'create-temp', cause: 'EEXIST' },
    })
    expect(existsSync(join(dir, 'session.v4.jsonl'))).toBe(false)
  })

  it('removes the temp and publishes nothing when verification fails (MIGRATION_FAILED step verify, with the cause code)', async () => {
    const dir = directory()
    const error = await failure(
      publishFile(
        request(dir, {
          verify: () => {
            throw new JsonlStoreError({ code: JsonlErrorCode.CORRUPT_LINE, message: 'bad', file: 'x' })
          },
        }),
      ),
    )
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'verify', cause: 'CORRUPT_LINE', published: false },
    })
    expect(readdirSync(dir)).toEqual([])
  })

  it('passes a typed error thrown by the content producer through unchanged, removing the temp', async () => {
    const dir = directory()
    const error = await failure(
      publishFile(
        request(dir, {
          content: async function* content() {
            await Promise.resolve()
            yield Buffer.from('x')
            throw new JsonlStoreError({
              code: JsonlErrorCode.INVALID_EVENT,
              message: 'no',
              file: 'a/session.jsonl',
            })
          },
        }),
      ),
    )
    expect(error.code).toBe('INVALID_EVENT')
    expect(readdirSync(dir)).toEqual([])
  })

  it('refuses to link when the source changed after it was read (MIGRATION_FAILED step check-source)', async () => {
    const dir = directory()
    const source = join(dir, 'session.jsonl')
    writeFileSync(source, 'v0\n')
    const stats = statSync(source)
    const error = await failure(
      publishFile(
        request(dir, {
          source: { path: source, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs },
          hooks: {
            at: (point) => {
              if (point === 'verified') utimesSync(source, new Date(0), new Date(0))
            },
          },
        }),
      ),
    )
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'check-source', cause: 'SOURCE_CHANGED' },
    })
    expect(readdirSync(dir)).toEqual(['session.jsonl'])
  })

  it('checks the writer lock just before the link and passes LOCK_LOST through', async () => {
    const dir = directory()
    const lock = {
      assertHeld: () =>
        Promise.reject(
          new JsonlStoreError({ code: JsonlErrorCode.LOCK_LOST, message: 'lost', file: 'x/writer.lock' }),
        ),
    }
    expect((await failure(publishFile(request(dir, { lock })))).code).toBe('LOCK_LOST')
    expect(readdirSync(dir)).toEqual([])
  })

  it.each(['EXDEV', 'EPERM', 'ENOSPC'])(
    'M6: link failing with %s gives MIGRATION_FAILED{step:link}, removes the temp and never falls back to rename',
    async (errno) => {
      const dir = directory()
      const faults = createFaultFs()
      faults.addFault({ op: 'link', errno })
      const fs = counting(faults)
      const error = await failure(publishFile(request(dir, { fs })))
      // A full disk is DISK_FULL wherever it happens (W12), with the publish's details.
      expect(error).toMatchObject({
        code: errno === 'ENOSPC' ? 'DISK_FULL' : 'MIGRATION_FAILED',
        details: { step: 'link', cause: errno, published: false, poisoned: false },
      })
      expect(readdirSync(dir)).toEqual([])
      expect(fs.renames).toBe(0)
    },
  )

  it('M6: a directory fsync EIO after the link withdraws the new name, removes the temp and reports poisoned', async () => {
    const dir = directory()
    const faults = createFaultFs()
    faults.addFault({ op: 'fsyncDirectory', errno: 'EIO' })
    const error = await failure(publishFile(request(dir, { fs: faults })))
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'fsync-dir', cause: 'EIO', poisoned: true, published: false },
    })
    expect(readdirSync(dir)).toEqual([])
  })

  it('M6: a write ENOSPC or a temp fsync EIO fails at its step with nothing published', async () => {
    for (const [op, errno, step] of [
      ['write', 'ENOSPC', 'write-temp'],
      ['sync', 'EIO', 'fsync-temp'],
      ['open', 'EACCES', 'create-temp'],
    ] as const) {
      const dir = directory()
      const faults = createFaultFs()
      faults.addFault({ op, errno })
      const error = await failure(publishFile(request(dir, { fs: faults })))
      const code = errno === 'ENOSPC' ? 'DISK_FULL' : 'MIGRATION_FAILED'
      expect(error).toMatchObject({ code, details: { step, cause: errno } })
      expect(readdirSync(dir)).toEqual([])
    }
  })

  it('refuses a kind that could be mistaken for the lock protocol or escape the directory', async () => {
    await expect(publishFile(request(directory(), { kind: 'lock' }))).rejects.toThrow(RangeError)
    await expect(publishFile(request(directory(), { kind: '../x' }))).rejects.toThrow(RangeError)
    await expect(publishFile(request(directory(), { randomHex: () => '../../x' }))).rejects.toThrow(
      RangeError,
    )
  })
})

describe('removeStaleTemps', () => {
  it('removes leftover publish temps, keeps lock temps, generations and quarantine files', async () => {
    const dir = directory()
    for (const name of [
      '.tmp-migrate-0011223344556677',
      '.tmp-create-8899aabbccddeeff',
      '.tmp-lock-0011223344556677',
      '.tmp-lockbreak-00',
      'session.jsonl',
      'session.v4.jsonl.torn-12',
      'writer.lock',
    ]) {
      writeFileSync(join(dir, name), 'x')
    }
    const removed = await removeStaleTemps(nodeFsOps, dir)
    expect(removed.sort()).toEqual(['.tmp-create-8899aabbccddeeff', '.tmp-migrate-0011223344556677'])
    expect(readdirSync(dir).sort()).toEqual([
      '.tmp-lock-0011223344556677',
      '.tmp-lockbreak-00',
      'session.jsonl',
      'session.v4.jsonl.torn-12',
      'writer.lock',
    ])
  })

  it('M4: removing a temp twin that shares the generation inode leaves the generation with one link and its bytes', async () => {
    const dir = directory()
    writeFileSync(join(dir, 'session.v4.jsonl'), CONTENT)
    linkSync(join(dir, 'session.v4.jsonl'), join(dir, '.tmp-migrate-0011223344556677'))
    expect(statSync(join(dir, 'session.v4.jsonl')).nlink).toBe(2)
    await removeStaleTemps(nodeFsOps, dir)
    expect(statSync(join(dir, 'session.v4.jsonl')).nlink).toBe(1)
    expect(readFileSync(join(dir, 'session.v4.jsonl'))).toEqual(CONTENT)
  })
})
