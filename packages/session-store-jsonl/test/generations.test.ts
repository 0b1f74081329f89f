import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import {
  assertGenerationVersion,
  compareGenerations,
  generationFileName,
  listGenerations,
  parseGenerationFileName,
  peekHeaderVersion,
  pickCurrentGeneration,
} from '../src/generations.ts'
import type { GenerationFile } from '../src/generations.ts'
import { JsonlStoreError } from '../src/jsonl-store-error.ts'
import { LOG_FILE_PATTERN } from '../src/layout.ts'
import { encodeJsonLine } from '../src/line-codec.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-generations-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function generation(version: number, encoding: 'plain' | 'zstd' = 'plain'): GenerationFile {
  return { file: generationFileName(version, encoding), version, encoding }
}

function thrown(run: () => unknown): JsonlStoreError {
  try {
    run()
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a JsonlStoreError')
}

describe('parseGenerationFileName', () => {
  it('reads session.jsonl as v0 and session.vN.jsonl as vN, with .zstd as the compressed encoding', () => {
    expect(parseGenerationFileName('session.jsonl')).toEqual({
      file: 'session.jsonl',
      version: 0,
      encoding: 'plain',
    })
    expect(parseGenerationFileName('session.jsonl.zstd')).toEqual({
      file: 'session.jsonl.zstd',
      version: 0,
      encoding: 'zstd',
    })
    expect(parseGenerationFileName('session.v4.jsonl')).toEqual({
      file: 'session.v4.jsonl',
      version: 4,
      encoding: 'plain',
    })
    expect(parseGenerationFileName('session.v4.jsonl.zstd')).toEqual({
      file: 'session.v4.jsonl.zstd',
      version: 4,
      encoding: 'zstd',
    })
    expect(parseGenerationFileName('session.v12.jsonl')?.version).toBe(12)
  })

  it.each([
    '.tmp-migrate-0123456789abcdef',
    '.tmp-lock-0123456789abcdef',
    'session.v4.jsonl.torn-1234',
    'session.v4.jsonl.torn-1234-2',
    'session.jsonl.torn-0',
    'session.v04.jsonl',
    'session.v0.jsonl',
    'session.V4.jsonl',
    'SESSION.jsonl',
    'session.v4.JSONL',
    'session.v4.jsonl.ZSTD',
    'session.v4.jsonl.zst',
    'session.v-1.jsonl',
    'session.v.jsonl',
    'session.v4.json',
    'writer.lock',
    'writer.lock.break-abc',
    'projection.checkpoint.msgpack',
    ' session.jsonl',
    'session.jsonl ',
    'session.jsonl\n',
    'session.v99999999999999999999.jsonl',
  ])('does not take %j for a generation', (name) => {
    expect(parseGenerationFileName(name)).toBeNull()
  })

  it('agrees with the layout pattern the store uses for canonical names', () => {
    for (const name of [
      'session.jsonl',
      'session.v4.jsonl.zstd',
      'session.v04.jsonl',
      'session.v0.jsonl',
      'x.jsonl',
    ]) {
      expect(parseGenerationFileName(name) !== null).toBe(LOG_FILE_PATTERN.test(name))
    }
  })

  it('round-trips generationFileName for every version and encoding', () => {
    for (const version of [0, 1, 4, 9, 10, 123]) {
      for (const encoding of ['plain', 'zstd'] as const) {
        expect(parseGenerationFileName(generationFileName(version, encoding))).toEqual(
          generation(version, encoding),
        )
      }
    }
    expect(() => generationFileName(-1)).toThrow(RangeError)
    expect(() => generationFileName(1.5)).toThrow(RangeError)
  })
})

describe('listGenerations', () => {
  it('lists only canonical generation names, sorted numerically (v10 after v9) with plain before zstd', async () => {
    const directory = join(scratch, 'listing')
    mkdirSync(directory, { mode: 0o700 })
    for (const name of [
      'session.v10.jsonl',
      'session.jsonl',
      'session.v9.jsonl',
      'session.v4.jsonl.zstd',
      'session.v4.jsonl',
      'session.v04.jsonl',
      'session.v0.jsonl',
      'session.v4.jsonl.torn-77',
      '.tmp-migrate-0011223344556677',
      'writer.lock',
      'projection.checkpoint.msgpack',
      'Session.jsonl',
    ]) {
      writeFileSync(join(directory, name), 'x')
    }
    const names = (await listGenerations(nodeFsOps, directory)).map((entry) => entry.file)
    expect(names).toEqual([
      'session.jsonl',
      'session.v4.jsonl',
      'session.v4.jsonl.zstd',
      'session.v9.jsonl',
      'session.v10.jsonl',
    ])
  })

  it('still lists a canonical name that is a symbolic link, so the open path can refuse it', async () => {
    const directory = join(scratch, 'symlinked')
    mkdirSync(directory, { mode: 0o700 })
    writeFileSync(join(directory, 'session.jsonl'), 'x')
    symlinkSync('/etc/hostname', join(directory, 'session.v4.jsonl'))
    expect((await listGenerations(nodeFsOps, directory)).map((entry) => entry.file)).toEqual([
      'session.jsonl',
      'session.v4.jsonl',
    ])
  })

  it('reports a missing session directory as SESSION_NOT_FOUND', async () => {
    const error = await listGenerations(nodeFsOps, join(scratch, 'absent')).catch((caught: unknown) => caught)
    expect(JsonlStoreError.is(error) && error.code).toBe('SESSION_NOT_FOUND')
  })
})

describe('pickCurrentGeneration', () => {
  it('picks the numerically highest version and keeps the rest as history', () => {
    const picked = pickCurrentGeneration([generation(9), generation(0), generation(10), generation(4)])
    expect(picked?.current.file).toBe('session.v10.jsonl')
    expect(picked?.conflict).toBeNull()
    expect(picked?.history.map((entry) => entry.file)).toEqual([
      'session.jsonl',
      'session.v4.jsonl',
      'session.v9.jsonl',
    ])
  })

  it('returns null for an empty listing', () => {
    expect(pickCurrentGeneration([])).toBeNull()
  })

  it('reports the same version in both encodings as an interrupted compress (both-encodings), reading the plain file', () => {
    const picked = pickCurrentGeneration([generation(4, 'zstd'), generation(0), generation(4)])
    expect(picked?.current.file).toBe('session.v4.jsonl')
    expect(picked?.conflict).toEqual({
      conflict: 'both-encodings',
      version: 4,
      files: ['session.v4.jsonl', 'session.v4.jsonl.zstd'],
    })
  })

  it('accepts a directory that is all zstd', () => {
    const picked = pickCurrentGeneration([generation(0, 'zstd'), generation(4, 'zstd')])
    expect(picked?.current.file).toBe('session.v4.jsonl.zstd')
    expect(picked?.conflict).toBeNull()
  })

  it('refuses plain and zstd generations of different versions with MIXED_ENCODINGS naming both files', () => {
    const error = thrown(() => pickCurrentGeneration([generation(0), generation(4, 'zstd')], 'abc'))
    expect(error.code).toBe('MIXED_ENCODINGS')
    expect(error.details['files']).toEqual(['abc/session.v4.jsonl.zstd', 'abc/session.jsonl'])
    expect(error.message).toContain('abc/session.jsonl')
    expect(error.message).toContain('abc/session.v4.jsonl.zstd')
  })

  it('refuses a mix even when the highest version has both encodings', () => {
    const error = thrown(() =>
      pickCurrentGeneration([generation(0), generation(2, 'zstd'), generation(4), generation(4, 'zstd')]),
    )
    expect(error.code).toBe('MIXED_ENCODINGS')
    expect(error.details['files']).toEqual(['session.v2.jsonl.zstd', 'session.jsonl'])
  })

  it('sorts with compareGenerations: version first, then plain before zstd', () => {
    const sorted = [generation(4, 'zstd'), generation(10), generation(4), generation(0)].sort(
      compareGenerations,
    )
    expect(sorted.map((entry) => entry.file)).toEqual([
      'session.jsonl',
      'session.v4.jsonl',
      'session.v4.jsonl.zstd',
      'session.v10.jsonl',
    ])
  })
})

describe('assertGenerationVersion', () => {
  it('accepts a header whose version matches the file name', () => {
    expect(() => assertGenerationVersion(generation(4), 4)).not.toThrow()
    expect(() => assertGenerationVersion(generation(0), 0)).not.toThrow()
  })

  it('refuses a file name whose version differs from its header with GENERATION_VERSION_MISMATCH', () => {
    const error = thrown(() => assertGenerationVersion(generation(4), 3, 'abc'))
    expect(error.code).toBe('GENERATION_VERSION_MISMATCH')
    expect(error.file).toBe('abc/session.v4.jsonl')
    expect(error.details).toEqual({ nameVersion: 4, headerVersion: 3 })
    expect(thrown(() => assertGenerationVersion(generation(4), '4')).details['headerVersion']).toBe('4')
    expect(
      thrown(() => assertGenerationVersion(generation(4), undefined)).details['headerVersion'],
    ).toBeNull()
  })
})

describe('peekHeaderVersion', () => {
  function file(content: string | Buffer): string {
    const path = join(scratch, `peek-${Math.random().toString(16).slice(2)}`)
    writeFileSync(path, content)
    return path
  }

  it('reads the version of a v1+ header line and of a v0 header event, from line 1 only', async () => {
    const checksummed = encodeJsonLine('{"format":"agent-ledger.session","version":99}')
    expect(await peekHeaderVersion(nodeFsOps, file(`${checksummed.toString('utf8')}{"seq":0}\n`))).toEqual({
      kind: 'version',
      version: 99,
    })
    // V7: a v1+ header failing its line checksum has no version to believe (damage, reported by the scan).
    expect(
      await peekHeaderVersion(
        nodeFsOps,
        file('{"format":"agent-ledger.session","version":99,"crc":"x"}\n{"seq":0}\n'),
      ),
    ).toEqual({ kind: 'unreadable' })
    expect(
      await peekHeaderVersion(
        nodeFsOps,
        file('{"seq":0,"time":"t","type":"session/header","data":{"version":0}}\n'),
      ),
    ).toEqual({ kind: 'version', version: 0 })
    expect(await peekHeaderVersion(nodeFsOps, file('{"seq":0,"type":"turn/start"}\n'))).toEqual({
      kind: 'version',
      version: undefined,
    })
  })

  it('reads a own version only: a __proto__ member cannot supply it (S3)', async () => {
    expect(await peekHeaderVersion(nodeFsOps, file('{"__proto__":{"version":1},"format":"x"}\n'))).toEqual({
      kind: 'version',
      version: undefined,
    })
  })

  it('reports an empty, unterminated, oversized or non-object first line as unreadable', async () => {
    for (const content of ['', '{"version":4', '[4]\n', `{"version":4,"pad":"${'x'.repeat(200)}"}\n`]) {
      expect(await peekHeaderVersion(nodeFsOps, file(content), { maxLineBytes: 100 })).toEqual({
        kind: 'unreadable',
      })
    }
  })

  it('never follows a symbolic link (SYMLINK_REFUSED) and reports a missing file as SESSION_NOT_FOUND', async () => {
    const link = join(scratch, 'peek-link')
    symlinkSync(file('{"version":4}\n'), link)
    expect(
      await peekHeaderVersion(nodeFsOps, link).catch(
        (error: unknown) => JsonlStoreError.is(error) && error.code,
      ),
    ).toBe('SYMLINK_REFUSED')
    expect(
      await peekHeaderVersion(nodeFsOps, join(scratch, 'peek-missing')).catch(
        (error: unknown) => JsonlStoreError.is(error) && error.code,
      ),
    ).toBe('SESSION_NOT_FOUND')
  })
})
