/* The bytes of one appended batch, and the check that no line holds a newline of its own. */

/**
 * The batch as the bytes of a JSONL file: each line encoded straight into one buffer, then
 * `\n`. (`lines.join('\n')` and one `Buffer.from` of the result cost 4x more CPU at a batch
 * of 100 one-byte lines of 3.6 KB, and 15x when one line makes the joined text two-byte:
 * measured, 23 vs 6 and 43 vs 2.8 us per line.)
 */
export function batchBytes(lines: readonly string[]): Buffer {
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
