// S4: decompression bombs and lying headers give typed errors with memory staying bounded.
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { scanFrames } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError } from '../src/zstd/zstd-frame-error.ts'
import { cliCompress, craftFrame, makeTempDir, rawBlock } from './zstd-helpers.ts'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const MiB = 1024 * 1024
let codec: ZstdCodec
let dir: string
let bombFile: string

beforeAll(async () => {
  codec = await loadZstdCodec()
  dir = makeTempDir()
  bombFile = join(dir, 'zeros-1GiB.zst')
  // 1 GiB of zeros through the stock CLI: about 32 KB of RLE blocks
  const made = spawnSync('bash', ['-c', `head -c 1G /dev/zero | zstd -19 -q -c > '${bombFile}'`])
  if (made.status !== 0) throw new Error(`could not build the bomb: ${made.stderr.toString()}`)
}, testTime(120_000))

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

function thrown(action: () => unknown): ZstdFrameError {
  try {
    action()
  } catch (error) {
    if (ZstdFrameError.is(error)) return error
    throw error
  }
  throw new Error('expected a ZstdFrameError, nothing was thrown')
}

// The reader's two bounds, as it applies them (src/zstd-log-reader.ts): the codec stops at
// maxOutputBytes; the plain log's LineSplitter never buffers a line over maxLineBytes (the
// 1 GiB of zeros is one line: the splitter's tail reports its length with no bytes held).
const CHILD = `
import { readFileSync } from 'node:fs'
const [srcDir, bombFile] = process.argv.slice(2)
const { loadZstdCodec } = await import(srcDir + '/zstd/zstd-codec.ts')
const { LineSplitter } = await import(srcDir + '/line-splitter.ts')
const { ZstdFrameScanner } = await import(srcDir + '/zstd/scan-frames.ts')
const codec = await loadZstdCodec()
const bytes = readFileSync(bombFile)
const [frame] = new ZstdFrameScanner().push(bytes)
const MiB = 1024 * 1024
// maxRSS is the peak over the process's life: run the mode with the lower expected peak first
const modes = {
  'output-limit': { maxOutputBytes: 64 * MiB, maxLineBytes: 64 * MiB },
  'line-limit': { maxOutputBytes: 4096 * MiB, maxLineBytes: 32 * MiB },
}
const report = { compressedBytes: bytes.length }
for (const [mode, limits] of Object.entries(modes)) {
  globalThis.gc?.()
  const baselineRss = process.memoryUsage().rss
  const splitter = new LineSplitter({ maxLineBytes: limits.maxLineBytes })
  const sink = { line: () => false, oversizeLine: () => false }
  let outcome
  try {
    codec.decompressFrameChunks(frame.bytes, limits, (chunk) =>
      splitter.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), sink),
    )
    const tail = splitter.finish()
    outcome =
      tail !== null && tail.bytes === null && tail.length > limits.maxLineBytes
        ? { code: 'LINE_TOO_LARGE', limit: limits.maxLineBytes, lineBytes: tail.length }
        : { code: 'NONE' }
  } catch (error) {
    outcome = { code: error.code, limit: error.limit, producedBytes: error.producedBytes }
  }
  report[mode] = { ...outcome, baselineRss, maxRss: process.resourceUsage().maxRSS * 1024 }
}
process.stdout.write(JSON.stringify(report))
`

interface ChildOutcome {
  code: string
  limit: number
  producedBytes?: number
  lineBytes?: number
  baselineRss: number
  maxRss: number
}

let childReport:
  { compressedBytes: number; 'output-limit': ChildOutcome; 'line-limit': ChildOutcome } | undefined

/** Runs both bomb modes once in one child process (tsx loads the TypeScript sources). */
function runChild(): NonNullable<typeof childReport> {
  if (childReport !== undefined) return childReport
  const script = join(dir, 'bomb-child.mts')
  writeFileSync(script, CHILD)
  const result = spawnSync(
    process.execPath,
    [
      '--conditions=@agent-ledger/source',
      '--import',
      'tsx',
      '--expose-gc',
      script,
      join(packageDir, 'src'),
      bombFile,
    ],
    { cwd: packageDir, encoding: 'utf8', timeout: testTime(120_000) },
  )
  if (result.status !== 0) throw new Error(`child failed (${result.status}): ${result.stderr}`)
  childReport = JSON.parse(result.stdout) as NonNullable<typeof childReport>
  return childReport
}

describe('bounded decompression', () => {
  it(
    'S4: 1 GiB of zeros compressed by zstd -19 is refused with DECOMPRESSION_LIMIT before decoding, RSS bounded (child)',
    () => {
      const scan = scanFrames(Buffer.from(spawnSync('cat', [bombFile]).stdout))
      expect(scan.frames[0]).toMatchObject({ maxContentSize: 1024 * MiB, windowSize: 8 * MiB })
      const report = runChild()
      expect(report.compressedBytes).toBeLessThan(64 * 1024)
      const child = report['output-limit']
      expect(child).toMatchObject({ code: 'DECOMPRESSION_LIMIT', limit: 64 * MiB, producedBytes: 0 })
      // Nothing was decoded (producedBytes 0). The RSS bound says the 1 GiB was never held: a
      // quarter of it. limit + 64 MiB measured the loader's and the GC's garbage instead (a
      // fresh-clone gate saw 143 MiB of growth with nothing produced).
      expect(child.maxRss - child.baselineRss).toBeLessThan((1024 * MiB) / 4)
    },
    testTime(120_000),
  )

  it(
    'S4: the same bomb read as one 1 GiB "line" with a 4 GiB output limit is LINE_TOO_LARGE, never held whole: RSS bounded (child)',
    () => {
      const child = runChild()['line-limit']
      expect(child).toMatchObject({ code: 'LINE_TOO_LARGE', limit: 32 * MiB, lineBytes: 1024 * MiB })
      // Never held whole: a 1 GiB line held once as bytes is 1 GiB of RSS. The bound is a quarter
      // of the line, not limit + a margin: the decoder's garbage before a GC is collected varies
      // with the machine's load (a gate under load saw 105 MiB of growth against a 96 MiB bound).
      expect(child.maxRss - child.baselineRss).toBeLessThan((1024 * MiB) / 4)
    },
    testTime(120_000),
  )

  it('S4: a frame claiming a 2^60 content size is refused before anything is decoded', () => {
    const fcs = [0, 0, 0, 0, 0, 0, 0, 0x10] // 2^60, little-endian
    const multiSegment = craftFrame({
      descriptor: 0xc0,
      windowDescriptor: 0x50,
      contentSizeBytes: fcs,
      blocks: [rawBlock('hello\n')],
    })
    expect(thrown(() => codec.decompressFrame(multiSegment, { maxOutputBytes: 64 * MiB }))).toMatchObject({
      code: 'DECOMPRESSION_LIMIT',
      limit: 64 * MiB,
      producedBytes: 0,
    })
    // single segment: the content size is also the window size
    const singleSegment = craftFrame({
      descriptor: 0xe0,
      contentSizeBytes: fcs,
      blocks: [rawBlock('hello\n')],
    })
    expect(thrown(() => codec.decompressFrame(singleSegment, { maxOutputBytes: 64 * MiB }))).toMatchObject({
      code: 'WINDOW_TOO_LARGE',
      windowSize: 2 ** 60,
    })
  })

  it('S4: a frame with windowLog 31 is WINDOW_TOO_LARGE, and so is a zstd CLI frame with windowLog 24', () => {
    const windowLog31 = craftFrame({
      descriptor: 0x00,
      windowDescriptor: (31 - 10) << 3,
      blocks: [rawBlock('hello\n')],
    })
    expect(thrown(() => codec.decompressFrame(windowLog31, { maxOutputBytes: 64 * MiB }))).toMatchObject({
      code: 'WINDOW_TOO_LARGE',
      windowSize: 2 ** 31,
      limit: 8 * MiB,
    })
    const cliFrame = cliCompress(Buffer.from('{"a":1}\n'.repeat(1000)), ['-3', '--zstd=wlog=24'])
    expect(thrown(() => codec.decompressFrame(cliFrame, { maxOutputBytes: 64 * MiB })).code).toBe(
      'WINDOW_TOO_LARGE',
    )
    // a smaller limit than the codec's ceiling is honoured too
    const twoMiB = cliCompress(Buffer.from('{"a":1}\n'.repeat(1000)), ['-3', '--zstd=wlog=21'])
    expect(
      thrown(() => codec.decompressFrame(twoMiB, { maxOutputBytes: 64 * MiB, maxWindowBytes: MiB })).code,
    ).toBe('WINDOW_TOO_LARGE')
    expect(codec.decompressFrame(twoMiB, { maxOutputBytes: 64 * MiB })).toHaveLength(8000)
  })

  it('S4: a frame whose declared content size lies (low or high) is CORRUPT_FRAME content-size-mismatch', () => {
    const declares256 = { descriptor: 0x40, windowDescriptor: 0x50, contentSizeBytes: [0, 0] } // FCS 2 bytes: 0 + 256
    const high = craftFrame({ ...declares256, blocks: [rawBlock('abc', false), rawBlock('def\n')] })
    const low = craftFrame({
      ...declares256,
      blocks: [rawBlock('x'.repeat(200), false), rawBlock(`${'y'.repeat(99)}\n`)],
    })
    for (const frame of [high, low]) {
      const error = thrown(() => codec.decompressFrame(frame, { maxOutputBytes: 64 * MiB }))
      expect(error.code).toBe('CORRUPT_FRAME')
      expect(['content-size-mismatch', 'decode-failed']).toContain(error.reason)
    }
    // the guard stops a lying-low frame as soon as it passes its declared size
    let handedOut = 0
    const error = thrown(() =>
      codec.decompressFrameChunks(low, { maxOutputBytes: 64 * MiB }, (chunk) => (handedOut += chunk.length)),
    )
    expect(error.code).toBe('CORRUPT_FRAME')
    expect(handedOut).toBeLessThanOrEqual(256)
  })
})
