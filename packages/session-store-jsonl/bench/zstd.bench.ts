/**
 * Zstandard benchmark (issue 5): a realistic generated session (32 MiB; 128 MiB with --large)
 * compressed and decompressed through our layer (zstd-codec wasm, streaming, frames of whole
 * lines) beside the stock `zstd` CLI on the same file in the same run.
 *
 * - Throughput: our MB/s (plain bytes per second) over the CLI's in-memory benchmark mode
 *   (`zstd -b3`), so `ratio` = ours / CLI (the native ceiling; < 1).
 * - Size: our compression ratio (plain / compressed) for each framing, over the ratio of
 *   `zstd -3` of the whole plain file, so `ratio` = ours / whole-file (target >= 0.8 for the
 *   framings a long-lived session should end up in).
 *
 * Run alone with `pnpm bench --only zstd`.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { LineSplitter } from '../src/line-splitter.ts'
import { encodeFrames } from '../src/zstd/encode-frames.ts'
import { ZstdFrameScanner } from '../src/zstd/scan-frames.ts'
import { loadZstdCodec } from '../src/zstd/zstd-codec.ts'
import type { ZstdCodec } from '../src/zstd/zstd-codec.ts'
import { generateSessionLines } from './generate-session.ts'
import type { BenchResult } from '../../../tooling/bench/types.ts'


const MiB = 1024 * 1024

function seconds(action: () => void): number {
  const started = performance.now()
  action()
  return (performance.now() - started) / 1000
}

/** Best of `runs` timings (the machine is shared: the minimum is the least disturbed). */
function best(runs: number, action: () => void): number {
  let fastest = Number.POSITIVE_INFINITY
  for (let run = 0; run < runs; run++) fastest = Math.min(fastest, seconds(action))
  return fastest
}

function cliBenchmark(file: string, level: number): { compress: number; decompress: number } {
  const result = spawnSync('zstd', [`-b${level}`, '-i3', '-q', file], { encoding: 'utf8' })
  const text = `${result.stdout}\n${result.stderr}`.replace(/\r/g, '\n')
  const match = /([\d.]+) MB\/s\s+([\d.]+) MB\/s/.exec(
    text
      .split('\n')
      .filter((line) => line.includes('MB/s'))
      .at(-1) ?? '',
  )
  if (result.status !== 0 || match === null)
    throw new Error(`zstd -b${level} failed or printed no speeds: ${text}`)
  // the CLI's MB is 10^6 bytes (and so is ours)
  return { compress: Number(match[1]), decompress: Number(match[2]) }
}

function cliCompressedSize(file: string, level: number): number {
  const result = spawnSync('zstd', [`-${level}`, '-q', '-c', file], { maxBuffer: 2 * 1024 * MiB })
  if (result.status !== 0) throw new Error(`zstd -${level} failed: ${result.stderr.toString()}`)
  return result.stdout.length
}

function splitLines(plain: Buffer): Buffer[] {
  const lines: Buffer[] = []
  for (let at = 0; at < plain.length;) {
    const end = plain.indexOf(0x0a, at) + 1
    lines.push(plain.subarray(at, end))
    at = end
  }
  return lines
}

/** Scan + bounded decode + line split of a whole file, as a reader does. Returns the line count. */
function readAll(codec: ZstdCodec, bytes: Uint8Array): number {
  const scanner = new ZstdFrameScanner()
  let lines = 0
  const sink = { line: () => (lines += 1) < 0, oversizeLine: () => false }
  for (let at = 0; at < bytes.length; at += MiB) {
    for (const frame of scanner.push(bytes.subarray(at, at + MiB))) {
      const splitter = new LineSplitter({ maxLineBytes: 64 * MiB })
      codec.decompressFrameChunks(frame.bytes, { maxOutputBytes: 256 * MiB }, (chunk) =>
        splitter.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), sink),
      )
      if (splitter.finish() !== null) throw new Error('a benchmark frame did not end on a line')
    }
  }
  if (scanner.end().tail.kind !== 'none') throw new Error('benchmark file did not scan cleanly')
  return lines
}

function perLineFrames(codec: ZstdCodec, lines: readonly Buffer[], perFrame: number): number {
  let size = 0
  for (let at = 0; at < lines.length; at += perFrame) {
    size += encodeFrames(lines.slice(at, at + perFrame), {
      codec,
      targetFrameBytes: Number.POSITIVE_INFINITY,
    }).bytes.length
  }
  return size
}

/**
 * Runs the benchmark.
 *
 * @param options - `scale`: `default` (32 MiB session) or `large` (128 MiB).
 * @returns The figures, each beside its CLI floor.
 */
export async function run(options: { scale?: 'default' | 'large' } = {}): Promise<BenchResult[]> {
  const targetBytes = options.scale === 'large' ? 128 * MiB : 32 * MiB
  const codec = await loadZstdCodec()
  const plain = Buffer.from(
    [...generateSessionLines({ seed: 42, targetBytes })].map((line) => `${line}\n`).join(''),
  )
  const lines = splitLines(plain)
  const megabytes = plain.length / 1e6
  const dir = mkdtempSync(join(tmpdir(), 'agent-ledger-zstd-bench-'))
  const results: BenchResult[] = []
  try {
    const file = join(dir, 'session.v4.jsonl')
    writeFileSync(file, plain)
    const cli = cliBenchmark(file, 3)
    const wholeSize = cliCompressedSize(file, 3)
    const wholeRatio = plain.length / wholeSize
    const sizeFloor = { name: `zstd -3 whole file (${(wholeSize / MiB).toFixed(2)} MiB)`, value: wholeRatio }
    const sizeFigure = (name: string, compressed: number, target?: string): BenchResult => {
      const value = plain.length / compressed
      const ratio = value / wholeRatio
      return {
        name: `zstd size: ${name}`,
        value,
        unit: 'x (plain/compressed)',
        floor: sizeFloor,
        ratio,
        ...(target === undefined ? {} : { target, met: ratio >= 0.8 }),
      }
    }

    // throughput: sealed framing (4 MiB frames) at level 3, the level the CLI is measured at
    let sealed: Uint8Array = new Uint8Array(0)
    const compressSeconds = best(2, () => {
      sealed = encodeFrames(plain, { codec, targetFrameBytes: 4 * MiB, level: 3 }).bytes
    })
    const decompressSeconds = best(2, () => {
      if (readAll(codec, sealed) !== lines.length) throw new Error('line count mismatch')
    })
    results.push({
      name: `zstd compress ${megabytes.toFixed(0)} MB session, level 3, 4 MiB frames`,
      value: megabytes / compressSeconds,
      unit: 'MB/s',
      floor: { name: 'zstd -b3 CLI (in memory)', value: cli.compress },
      ratio: megabytes / compressSeconds / cli.compress,
    })
    results.push({
      name: `zstd read ${megabytes.toFixed(0)} MB session (scan + bounded decode + line split)`,
      value: megabytes / decompressSeconds,
      unit: 'MB/s',
      floor: { name: 'zstd -b3 CLI decompress (in memory)', value: cli.decompress },
      ratio: megabytes / decompressSeconds / cli.decompress,
    })

    // small frames: what one flush costs
    const oneLine = lines[Math.floor(lines.length / 2)] ?? Buffer.from('{}\n')
    let smallFrame: Uint8Array = new Uint8Array(0)
    const smallCompress = best(3, () => {
      for (let index = 0; index < 200; index++) smallFrame = codec.compressFrame(oneLine, 3)
    })
    const smallDecompress = best(3, () => {
      for (let index = 0; index < 200; index++)
        codec.decompressFrame(smallFrame, { maxOutputBytes: 64 * MiB })
    })
    results.push({
      name: `zstd one-line frame (${oneLine.length} B) compress`,
      value: (smallCompress / 200) * 1e6,
      unit: 'µs/frame',
    })
    results.push({
      name: 'zstd one-line frame decompress',
      value: (smallDecompress / 200) * 1e6,
      unit: 'µs/frame',
    })

    // size: one frame per flush of N lines (live writing), then sealed framings
    for (const perFrame of [1, 10, 100, 1000]) {
      results.push(
        sizeFigure(
          `one frame per flush of ${perFrame} line${perFrame === 1 ? '' : 's'}, level 3`,
          perLineFrames(codec, lines, perFrame),
        ),
      )
    }
    results.push(
      sizeFigure(
        'sealed, 1 MiB frames, level 3',
        encodeFrames(plain, { codec, targetFrameBytes: MiB, level: 3 }).bytes.length,
      ),
    )
    results.push(sizeFigure('sealed, 4 MiB frames, level 3', sealed.length))
    const sealedL6 = encodeFrames(plain, { codec, targetFrameBytes: 4 * MiB, level: 6 }).bytes
    results.push(sizeFigure('sealed, 4 MiB frames, level 6', sealedL6.length, '>= 0.8'))
    // a long-lived session: everything but the last 4 MiB sealed (level 6), the live tail in 1-line frames
    const tailStart = plain.lastIndexOf(0x0a, plain.length - 4 * MiB - 1) + 1
    const prefix = encodeFrames(plain.subarray(0, tailStart), { codec, targetFrameBytes: 4 * MiB, level: 6 })
      .bytes.length
    const tail = perLineFrames(codec, splitLines(plain.subarray(tailStart)), 1)
    results.push(
      sizeFigure(
        'sealed prefix (4 MiB frames, level 6) + last 4 MiB live (1-line frames)',
        prefix + tail,
        '>= 0.8',
      ),
    )
    const sealL6Seconds = best(1, () => encodeFrames(plain, { codec, targetFrameBytes: 4 * MiB, level: 6 }))
    results.push({
      name: 'zstd seal (re-encode whole session, level 6, 4 MiB frames)',
      value: megabytes / sealL6Seconds,
      unit: 'MB/s',
      floor: { name: 'zstd -b3 CLI (in memory)', value: cli.compress },
      ratio: megabytes / sealL6Seconds / cli.compress,
    })
    return results
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
