// Shared fixtures of the zstd tests: checksummed lines as the store writes them, the `zstd`
// CLI as the oracle, temp directories.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { crc32c } from '@node-rs/crc32'

import { LineSplitter } from '../src/line-splitter.ts'
import type { ZstdScannedFrame } from '../src/zstd/scan-frames.ts'
import type { ZstdCodec, ZstdDecompressLimits } from '../src/zstd/zstd-codec.ts'
import { ZstdFrameError, ZstdFrameErrorCode } from '../src/zstd/zstd-frame-error.ts'

/** Serializes `object` as a v4 line: JSON with the `,"crc":"xxxxxxxx"}` suffix and `\n`. */
export function checksummedLine(object: Record<string, unknown>): Buffer {
  const json = JSON.stringify(object)
  const body = json.slice(0, -1)
  const crc = (crc32c(Buffer.from(body)) >>> 0).toString(16).padStart(8, '0')
  return Buffer.from(`${body},"crc":"${crc}"}\n`)
}

/** True when `line` (without `\n`) ends with a `crc` member matching CRC-32C of the bytes before it. */
export function lineChecksumValid(line: Uint8Array): boolean {
  const suffixLength = 18
  if (line.length < suffixLength + 1) return false
  const suffix = Buffer.from(line.subarray(line.length - suffixLength)).toString('latin1')
  const match = /^,"crc":"([0-9a-f]{8})"\}$/.exec(suffix)
  if (match === null) return false
  const crc = (crc32c(Buffer.from(line.subarray(0, line.length - suffixLength))) >>> 0)
    .toString(16)
    .padStart(8, '0')
  return crc === match[1]
}

/** `count` checksummed event lines with seq from `firstSeq`, varied enough to exercise all block kinds. */
export function eventLines(count: number, firstSeq = 0): Buffer[] {
  const lines: Buffer[] = []
  for (let index = 0; index < count; index++) {
    const seq = firstSeq + index
    lines.push(
      checksumedEvent(seq, {
        message: {
          role: seq % 3 === 0 ? 'tool' : 'assistant',
          content: `Step ${seq}: ${'read the file and check the frame header. '.repeat((seq * 7) % 5)}${seq * 7919}`,
        },
      }),
    )
  }
  return lines
}

function checksumedEvent(seq: number, data: Record<string, unknown>): Buffer {
  return checksummedLine({ seq, time: '2025-01-06T09:30:00.000Z', type: 'tool/result', data })
}

/** Runs the `zstd` CLI; returns status, stdout and stderr. */
export function zstdCli(
  args: readonly string[],
  input?: Uint8Array,
): { status: number | null; stdout: Buffer; stderr: string } {
  const result = spawnSync('zstd', args, {
    input,
    maxBuffer: 1024 * 1024 * 1024,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  if (result.error !== undefined) throw result.error
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString('utf8') }
}

/**
 * Compresses `input` with the CLI: from stdin (size unknown: no content size in the frame) or,
 * with `fromFile`, from a temp file (the frame declares its content size).
 */
export function cliCompress(input: Uint8Array, args: readonly string[] = ['-3'], fromFile = false): Buffer {
  if (!fromFile) {
    const result = zstdCli(['-q', '-c', ...args], input)
    if (result.status !== 0) throw new Error(`zstd ${args.join(' ')} failed: ${result.stderr}`)
    return result.stdout
  }
  const dir = makeTempDir()
  try {
    const file = join(dir, 'session.v4.jsonl')
    writeFileSync(file, input)
    const result = zstdCli(['-q', '-c', ...args, file])
    if (result.status !== 0) throw new Error(`zstd ${args.join(' ')} failed: ${result.stderr}`)
    return result.stdout
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** `zstd -t` and `zstd -d` of `bytes` (written to a temp file, as a user would). */
export function cliCheck(bytes: Uint8Array): { testOk: boolean; plain: Buffer | undefined; stderr: string } {
  const dir = makeTempDir()
  try {
    const file = join(dir, 'session.v4.jsonl.zstd')
    writeFileSync(file, bytes)
    const test = zstdCli(['-t', '-q', file])
    const decoded = zstdCli(['-d', '-q', '-c', file])
    return {
      testOk: test.status === 0,
      plain: decoded.status === 0 ? decoded.stdout : undefined,
      stderr: test.stderr,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A fresh temp directory under `os.tmpdir()`. */
export function makeTempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agent-ledger-zstd-'))
}

/** A hand-made Zstandard frame: `descriptor`, optional window descriptor and FCS bytes, then blocks. */
export function craftFrame(options: {
  descriptor: number
  windowDescriptor?: number
  contentSizeBytes?: readonly number[]
  blocks: readonly { last: boolean; type: 0 | 1 | 2 | 3; size: number; data: readonly number[] }[]
  checksum?: readonly number[]
}): Uint8Array {
  const bytes: number[] = [0x28, 0xb5, 0x2f, 0xfd, options.descriptor]
  if (options.windowDescriptor !== undefined) bytes.push(options.windowDescriptor)
  bytes.push(...(options.contentSizeBytes ?? []))
  for (const block of options.blocks) {
    const header = (block.last ? 1 : 0) | (block.type << 1) | (block.size << 3)
    bytes.push(header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff, ...block.data)
  }
  bytes.push(...(options.checksum ?? []))
  return Uint8Array.from(bytes)
}

/** A raw last block holding `text`. */
export function rawBlock(
  text: string,
  last = true,
): { last: boolean; type: 0; size: number; data: number[] } {
  const data = [...Buffer.from(text)]
  return { last, type: 0, size: data.length, data }
}

/** Concatenates byte arrays. */
export function concatBytes(parts: readonly Uint8Array[]): Buffer {
  return Buffer.concat(parts.map((part) => Buffer.from(part.buffer, part.byteOffset, part.byteLength)))
}

/**
 * The lines of one scanned frame, each without its `\n`, as the reader's check pass gets them
 * (`src/zstd-log-reader.ts`): decoded by the codec under `limits` (a skippable frame holds none)
 * and cut by the plain log's `LineSplitter`. Codec errors propagate; content that does not end
 * with `\n` is thrown as `CORRUPT_FRAME` `frame-not-line-aligned` (Z4); a line over
 * `maxLineBytes` (never buffered by the splitter) as a plain `Error`.
 */
export function frameLines(
  codec: ZstdCodec,
  frame: ZstdScannedFrame,
  options: { readonly limits?: ZstdDecompressLimits; readonly maxLineBytes?: number } = {},
): Buffer[] {
  const lines: Buffer[] = []
  if (frame.info.kind === 'skippable') return lines
  const maxLineBytes = options.maxLineBytes ?? 1 << 20
  const tooLarge = (): Error => new Error(`a line of frame ${frame.info.index} is over ${maxLineBytes} bytes`)
  const splitter = new LineSplitter({ maxLineBytes })
  const sink = {
    line: (bytes: Buffer) => lines.push(Buffer.from(bytes)) < 0,
    oversizeLine: () => {
      throw tooLarge()
    },
  }
  codec.decompressFrameChunks(frame.bytes, options.limits ?? { maxOutputBytes: 256 << 20 }, (chunk) =>
    splitter.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), sink),
  )
  const tail = splitter.finish()
  if (tail !== null && tail.length > maxLineBytes) throw tooLarge()
  if (tail !== null) {
    throw new ZstdFrameError({
      code: ZstdFrameErrorCode.CORRUPT_FRAME,
      message: `frame ${frame.info.index} ends with ${tail.length} bytes after its last newline`,
      reason: 'frame-not-line-aligned',
    })
  }
  return lines
}
