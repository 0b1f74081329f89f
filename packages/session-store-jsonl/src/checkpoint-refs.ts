import { crc32c } from '@node-rs/crc32'

import { lineCrcMember } from './checkpoint-binding.ts'
import { crcHex } from './checkpoint-format.ts'
import type { LineRef } from './checkpoint-format.ts'
import type { FileHandleOps } from './fs-ops.ts'
import type { LineLimits } from './line-codec.ts'
import type { LogFormat } from './log-format.ts'

const NEWLINE = 0x0a
/** Largest read of the prefix pass and of the reference reads (one buffer, reused). */
const CHECKPOINT_READ_BYTES = 4 * 1024 * 1024
/** Two referenced lines closer than this are read in one read (the gap is read through). */
const MERGE_GAP_BYTES = 64 * 1024

/**
 * Reads exactly `length` bytes at `position` into `buffer` (fewer only at the end of the file).
 *
 * @returns The number of bytes read.
 */
async function readFully(
  handle: FileHandleOps,
  buffer: Buffer,
  range: { readonly length: number; readonly position: number },
): Promise<number> {
  let got = 0
  while (got < range.length) {
    const count = await handle.read(buffer, got, range.length - got, range.position + got)
    if (count === 0) break
    got += count
  }
  return got
}

/**
 * CRC-32C of the bytes `[0, end)` of a file, in reads of up to 4 MiB (one buffer), continuing
 * from a known CRC of `[0, start)`: the whole-prefix check of a write open, and how a writer
 * extends the CRC it binds its next checkpoint to.
 *
 * @param handle - The open log.
 * @param range - `start` and the CRC of `[0, start)` (0 and 0 for the whole file), and `end`.
 * @returns The CRC-32C of `[0, end)`, or null when the file ends before `end`.
 */
export async function prefixCrc32c(
  handle: FileHandleOps,
  range: { readonly start: number; readonly crc: number; readonly end: number },
): Promise<number | null> {
  let crc = range.crc
  let position = range.start
  const buffer = Buffer.allocUnsafe(Math.min(CHECKPOINT_READ_BYTES, Math.max(0, range.end - position)))
  while (position < range.end) {
    const length = Math.min(buffer.length, range.end - position)
    const count = await readFully(handle, buffer, { length, position })
    if (count < length) return null
    crc = crc32c(buffer.subarray(0, count), crc) >>> 0
    position += count
  }
  return crc
}

/** What {@link readReferencedLines} needs besides the references. */
export interface ReferenceContext {
  readonly format: LogFormat
  readonly limits: LineLimits
}

/** The decoded lines read back, in the order of the references, or why one of them does not hold. */
export type ReferencedLines =
  | { readonly ok: true; readonly values: readonly Record<string, unknown>[] }
  | { readonly ok: false; readonly detail: string }

/** Consecutive references (by offset) read with one read. */
interface ReadGroup {
  readonly start: number
  readonly end: number
  readonly members: readonly number[]
}

function groupsOf(refs: readonly LineRef[]): ReadGroup[] {
  const order = refs.map((_, index) => index).sort((a, b) => refs[a]!.offset - refs[b]!.offset)
  const groups: ReadGroup[] = []
  let members: number[] = []
  let start = 0
  let end = 0
  for (const index of order) {
    const ref = refs[index]!
    // One byte before each line: the previous line's `\n`.
    const from = ref.offset - 1
    const to = ref.offset + ref.length
    if (members.length > 0 && from - end <= MERGE_GAP_BYTES && to - start <= CHECKPOINT_READ_BYTES) {
      members.push(index)
      end = Math.max(end, to)
      continue
    }
    if (members.length > 0) groups.push({ start, end, members })
    members = [index]
    start = from
    end = to
  }
  if (members.length > 0) groups.push({ start, end, members })
  return groups
}

/**
 * Checks one referenced line and decodes it as a full scan's line checks do: a `\n` before
 * it and at its end and none inside, the recorded `crc` member, the line checksum and every
 * line check (`format.decodeEvent`), and the recorded seq. The event contract is not run
 * again here: the line is byte for byte the one the writer validated (same CRC), and the
 * projection restore validates every message and event N.
 */
function lineAt(
  bytes: Buffer,
  at: number,
  request: { readonly ref: LineRef; readonly context: ReferenceContext },
): Record<string, unknown> | string {
  const { ref, context } = request
  const where = `the line of seq ${ref.seq} at byte ${ref.offset}`
  const lineEnd = at + ref.length - 1
  if (bytes[at - 1] !== NEWLINE || bytes[lineEnd] !== NEWLINE) return `${where} is not a whole line`
  const line = bytes.subarray(at, lineEnd)
  if (line.indexOf(NEWLINE) !== -1) return `${where} spans more than one line`
  const member = lineCrcMember(line)
  if (member !== crcHex(ref.crc)) {
    return `${where} has crc ${member ?? 'none'}, the checkpoint recorded ${crcHex(ref.crc)} (the line changed)`
  }
  const decoded = context.format.decodeEvent(line, context.limits)
  if (!decoded.ok) return `${where} fails the ${decoded.reason} check`
  const seq = Object.hasOwn(decoded.value, 'seq') ? decoded.value['seq'] : undefined
  if (seq !== ref.seq) return `${where} has seq ${JSON.stringify(seq) ?? 'none'}`
  return decoded.value
}

/**
 * Reads the lines a checkpoint refers to back from the log, each checked (see `lineAt`): lines are read in offset order, neighbours closer than 64 KiB in one read of
 * at most 4 MiB, so a surface that covers most of the log costs about one read of it.
 *
 * @param handle - The open log.
 * @param request - The references and the decoding context.
 * @returns The decoded lines in the order of `refs`, or the first reference that does not hold.
 */
export async function readReferencedLines(
  handle: FileHandleOps,
  request: { readonly refs: readonly LineRef[]; readonly context: ReferenceContext },
): Promise<ReferencedLines> {
  const { refs, context } = request
  const values = new Array<Record<string, unknown>>(refs.length)
  let buffer = Buffer.allocUnsafe(0)
  for (const group of groupsOf(refs)) {
    const length = group.end - group.start
    if (buffer.length < length)
      buffer = Buffer.allocUnsafe(Math.max(length, Math.min(CHECKPOINT_READ_BYTES, 1 << 20)))
    const got = await readFully(handle, buffer, { length, position: group.start })
    if (got < length) return { ok: false, detail: `the log ends before byte ${group.end}` }
    for (const index of group.members) {
      const ref = refs[index]!
      const value = lineAt(buffer, ref.offset - group.start, { ref, context })
      if (typeof value === 'string') return { ok: false, detail: value }
      values[index] = value
    }
  }
  return { ok: true, values }
}

/**
 * Drops the line references a writer no longer needs: keeps those of the surface's nodes and
 * of events after `afterSeq` (lines already written whose checkpoint is still to come).
 *
 * @param refs - The references, by seq (changed in place).
 * @param keep - The surface's nodes, and the last seq the surface covers.
 */
export function pruneLineRefs(
  refs: Map<number, LineRef>,
  keep: { readonly surface: readonly { readonly seq: number }[]; readonly afterSeq: number },
): void {
  const live = new Set<number>()
  for (const node of keep.surface) live.add(node.seq)
  for (const seq of refs.keys()) {
    if (seq <= keep.afterSeq && !live.has(seq)) refs.delete(seq)
  }
}

/**
 * The reference of one line as it is in memory (without its `\n`) at `offset`.
 *
 * @param line - The line's bytes, without `\n`, ending with its checksum suffix.
 * @param where - Its seq and byte offset.
 * @returns The reference, or null when the line has no well-formed `crc` member.
 */
export function lineRefOf(
  line: Uint8Array,
  where: { readonly seq: number; readonly offset: number },
): LineRef | null {
  const member = lineCrcMember(line)
  if (member === null) return null
  return { seq: where.seq, offset: where.offset, length: line.length + 1, crc: Number.parseInt(member, 16) }
}
