/* The bytes of one appended batch, and the check that no line holds a newline of its own. */

/**
 * The batch as the bytes of a JSONL file: the caller's encoding of it when it offers one
 * (`AppendBatch.bytes`: the core's writer encoded each line once, for its checksum; viewed,
 * not copied), else each line encoded straight into one buffer, then `\n`: no joined string
 * of the whole batch to allocate, collect and encode again (the append bench's `CPU per
 * event` line shows what a flush costs). The caller checks the newline count either way.
 */
export function batchBytes(lines: readonly string[], encoded?: Uint8Array): Buffer {
  if (encoded instanceof Uint8Array && encoded.length > 0 && encoded[encoded.length - 1] === 0x0a) {
    return Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength)
  }
  let length = lines.length
  for (const line of lines) length += Buffer.byteLength(line, 'utf8')
  const bytes = Buffer.allocUnsafe(length)
  let at = 0
  for (const line of lines) {
    at += bytes.write(line, at, 'utf8')
    bytes[at] = 0x0a
    at += 1
  }
  return bytes
}

/** How many `\n` the batch holds: one per line, unless a line holds one itself (a byte search). */
export function countNewlines(bytes: Buffer): number {
  let count = 0
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) count += 1
  return count
}
