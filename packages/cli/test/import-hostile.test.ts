import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { DEFAULT_STORE_LIMITS } from '@agent-ledger/session-store-jsonl'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { zstdText } from '../src/commands/zstd-stream.ts'
import { cli, makeRoot } from './support/sessions.ts'

const synthetic = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'import', 'test', 'fixtures')

let root: string
let cleanup: () => void
beforeEach(() => {
  ;({ root, cleanup } = makeRoot('al-import-hostile-'))
})
afterEach(() => cleanup())

interface ImportJson {
  sources: {
    file: string
    sessions: { id: string; action: string }[]
    report?: { diagnostics: { code: string }[] }
  }[]
  failures: { file: string; error: { code: string; message: string } }[]
}

const BLOCK = 128 * 1024

/**
 * A decompression bomb of a few KB, written by hand (RFC 8878): one frame without a declared
 * size (window 128 KiB), RLE blocks of 128 KiB of spaces with a one-byte raw `\n` block after
 * every eighth (1 MiB blank lines: never one line over the limit), decoding to `bytes`.
 */
function bomb(bytes: number): Buffer {
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3])]
  const blockHeader = (last: boolean, type: number, size: number): Buffer => {
    const value = (last ? 1 : 0) | (type << 1) | (size << 3)
    return Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff])
  }
  const blocks = Math.ceil(bytes / BLOCK)
  for (let index = 0; index < blocks; index += 1) {
    parts.push(blockHeader(false, 1, BLOCK), Buffer.from([0x20]))
    parts.push(blockHeader(index === blocks - 1, 0, 1), Buffer.from('\n'))
  }
  return Buffer.concat(parts)
}

describe('.jsonl.zst sources stop at the store decompression limit (issue 25 item 8)', () => {
  const limit = DEFAULT_STORE_LIMITS.maxFrameOutputBytes

  it('zstdText: DECOMPRESSION_LIMIT once a frame passes the limit, having handed out at most the limit', async () => {
    const path = join(root, 'bomb.jsonl.zst')
    const file = bomb(limit + 8 * BLOCK)
    writeFileSync(path, file)
    expect(file.length).toBeLessThan(32 * 1024)
    let chars = 0
    let largest = 0
    const read = async (): Promise<void> => {
      for await (const piece of zstdText(path, createHash('sha256'), () => undefined)) {
        chars += piece.length
        largest = Math.max(largest, piece.length)
      }
    }
    await expect(read()).rejects.toMatchObject({ code: 'DECOMPRESSION_LIMIT', limit, frameIndex: 0 })
    expect(chars).toBeLessThanOrEqual(limit)
    // Never joined: each piece is what one block decodes to.
    expect(largest).toBeLessThanOrEqual(BLOCK)
  })

  it('agent-ledger import: the bomb is a DECOMPRESSION_LIMIT failure, no session left behind', async () => {
    const sources = join(root, 'sources')
    mkdirSync(sources)
    writeFileSync(join(sources, 'rollout-bomb.jsonl.zst'), bomb(limit + 8 * BLOCK))
    cpSync(join(synthetic, 'pi', 'v2.jsonl'), join(sources, 'pi.jsonl'))
    const store = join(root, 'store')
    const run = await cli(['import', sources, '--root', store, '--json', '--no-progress'])
    expect(run.code).toBe(1)
    const report = JSON.parse(run.stdout) as ImportJson
    expect(
      report.failures.map((failure) => [failure.file.endsWith('rollout-bomb.jsonl.zst'), failure.error.code]),
    ).toEqual([[true, 'DECOMPRESSION_LIMIT']])
    expect(readdirSync(store)).toEqual(['pi-6a1b2c3d-0000-4000-8000-0000000000v2'])
  })
})

describe('hostile source files (issue 25 item 9)', () => {
  it('a FIFO source is NOT_REGULAR_FILE, refused without opening it (a read would block)', async () => {
    const fifo = join(root, 'session.jsonl')
    const made = spawnSync('mkfifo', [fifo])
    expect(made.status, 'mkfifo').toBe(0)
    const run = await cli(['import', fifo, '--root', join(root, 'store'), '--json', '--no-progress'])
    expect(run.code).toBe(1)
    expect(run.stderr + run.stdout).toContain('NOT_REGULAR_FILE')
    expect(run.stderr + run.stdout).toContain('found a FIFO')
    expect(run.stderr + run.stdout).not.toContain('ENOTDIR')
  })

  it('a symlink to a file that is not a session: the error never shows its content', async () => {
    const secret = join(root, 'passwd')
    writeFileSync(
      secret,
      'root:x:0:0:root-secret-marker:/root:/bin/bash\ndaemon:x:1:1:daemon-secret-marker:/usr/sbin:/usr/sbin/nologin\n',
    )
    const link = join(root, 'session.jsonl')
    symlinkSync(secret, link)
    for (const extra of [[], ['--json']]) {
      const run = await cli(['import', link, '--root', join(root, 'store'), '--no-progress', ...extra])
      expect(run.code).toBe(1)
      const output = run.stdout + run.stderr
      expect(output).toContain('MALFORMED_LINE')
      expect(output).not.toContain('secret-marker')
      expect(output).not.toContain('root:x')
    }
  })
})

describe('exports never print the machine path of the log (issue 25 item 9)', () => {
  it.each(['md', 'html'])('%s: the log is named relative to the store root', async (format) => {
    const store = join(root, 'store')
    const imported = await cli([
      'import',
      join(synthetic, 'pi', 'v2.jsonl'),
      '--root',
      store,
      '--no-progress',
    ])
    expect(imported.code).toBe(0)
    const id = 'pi-6a1b2c3d-0000-4000-8000-0000000000v2'
    const run = await cli(['export', join(store, id), '--format', format, '-o', '-', '--no-progress'])
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain(root)
    expect(run.stdout).toContain(`${id}/session.v4.jsonl`)
  })
})

describe('a record the store cannot hold (issue 25 item 7)', () => {
  const source = (): string => {
    const lines = readFileSync(join(synthetic, 'pi', 'v2.jsonl'), 'utf8').split('\n')
    const huge =
      '{"type":"custom","id":"huge","parentId":"f3","timestamp":"2026-03-04T12:00:04.000Z","usage":{"input_tokens":1e400}}'
    const path = join(root, 'pi-huge.jsonl')
    writeFileSync(path, [...lines.filter((line) => line !== ''), huge, ''].join('\n'))
    return path
  }

  it('strict: UNSTORABLE_RECORD naming the line, no session folder left', async () => {
    const store = join(root, 'store')
    const run = await cli(['import', source(), '--root', store, '--no-progress'])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('UNSTORABLE_RECORD')
    expect(existsSync(store) ? readdirSync(store) : []).toEqual([])
  })

  it('--lenient: skipped and counted, the session imported', async () => {
    const store = join(root, 'store')
    const run = await cli(['import', source(), '--root', store, '--lenient', '--json', '--no-progress'])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as ImportJson
    expect(report.sources[0]!.report!.diagnostics.map((finding) => finding.code)).toContain(
      'UNSTORABLE_RECORD',
    )
    expect(readdirSync(store)).toEqual(['pi-6a1b2c3d-0000-4000-8000-0000000000v2'])
    const verify = await cli(['verify', join(store, 'pi-6a1b2c3d-0000-4000-8000-0000000000v2')])
    expect(verify.code).toBe(0)
  })
})
