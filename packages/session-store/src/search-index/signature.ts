/**
 * Trigram signatures of a search index (pure: no I/O, no clock): a block of log lines is
 * summarized by a fixed-size bit set holding one bit per ASCII-lowercased byte trigram of
 * its lines (a Bloom filter with one hash). A query's fragments of 3 or more characters give
 * the bits a block must have to hold them; a block missing one is not read. Trigrams are
 * taken from the raw UTF-8 bytes, so a fragment (printable ASCII, lowercase; see
 * `SearchCandidateQuery.fragments`) written verbatim in a line sets its trigrams' bits.
 */

/** Bits of one block signature (a power of two). */
const SIGNATURE_BITS = 8192
/** Bytes of one block signature. */
export const SIGNATURE_BYTES = SIGNATURE_BITS / 8
const SHIFT = 32 - Math.log2(SIGNATURE_BITS)
const GOLDEN = 0x9e3779b1

/** ASCII `A`-`Z` to `a`-`z`; every other byte unchanged (so a non-ASCII byte never becomes ASCII). */
export const ASCII_LOWER: Uint8Array = (() => {
  const table = new Uint8Array(256)
  for (let byte = 0; byte < 256; byte += 1) table[byte] = byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte
  return table
})()

/**
 * Sets the bits of every trigram of one line in `signature` (the line's own trigrams:
 * none crosses its ends). Bytes are folded as the core's `/iu` matcher compares: ASCII
 * lowercased, and U+212A KELVIN SIGN (`E2 84 AA`) and U+017F LONG S (`C5 BF`), the two
 * non-ASCII characters that match an ASCII letter, count as `k` and `s`.
 *
 * @param signature - A {@link SIGNATURE_BYTES}-byte bit set, updated in place.
 * @param bytes - The line's bytes, without `\n` (any view).
 */
export function addTrigrams(signature: Uint8Array, bytes: Uint8Array): void {
  const lower = ASCII_LOWER
  const to = bytes.length
  let window = 0
  let codes = 0
  for (let index = 0; index < to; index += 1) {
    let code = lower[bytes[index]!]!
    if (code === 0xe2 && bytes[index + 1] === 0x84 && bytes[index + 2] === 0xaa) {
      code = 0x6b
      index += 2
    } else if (code === 0xc5 && bytes[index + 1] === 0xbf) {
      code = 0x73
      index += 1
    }
    window = ((window << 8) | code) & 0xffffff
    codes += 1
    if (codes < 3) continue
    const bit = Math.imul(window, GOLDEN) >>> SHIFT
    signature[bit >>> 3]! |= 1 << (bit & 7)
  }
}

/**
 * True when `bytes` holds U+212A or U+017F, which the core's matcher folds to `k` and `s`: a
 * byte-wise ASCII comparison cannot rule such a line out.
 *
 * @param bytes - Bytes of one or more lines.
 */
export function holdsFoldedLetter(bytes: Uint8Array): boolean {
  for (let index = bytes.indexOf(0xe2); index !== -1; index = bytes.indexOf(0xe2, index + 1)) {
    if (bytes[index + 1] === 0x84 && bytes[index + 2] === 0xaa) return true
  }
  for (let index = bytes.indexOf(0xc5); index !== -1; index = bytes.indexOf(0xc5, index + 1)) {
    if (bytes[index + 1] === 0xbf) return true
  }
  return false
}

/**
 * The signature bits a block must have to hold every fragment: one per distinct trigram of
 * the fragments of 3 or more characters (none for shorter ones: they narrow nothing).
 *
 * @param fragments - Lowercase printable-ASCII fragments.
 * @returns Sorted, distinct bit numbers; empty when no fragment is 3 characters long.
 */
export function fragmentBits(fragments: readonly string[]): readonly number[] {
  const bits = new Set<number>()
  const scratch = new Uint8Array(SIGNATURE_BYTES)
  for (const fragment of fragments) {
    const bytes = new Uint8Array(fragment.length)
    for (let index = 0; index < fragment.length; index += 1) bytes[index] = fragment.charCodeAt(index) & 0xff
    scratch.fill(0)
    addTrigrams(scratch, bytes)
    for (let byte = 0; byte < scratch.length; byte += 1) {
      const value = scratch[byte]!
      if (value === 0) continue
      for (let bit = 0; bit < 8; bit += 1) if ((value & (1 << bit)) !== 0) bits.add(byte * 8 + bit)
    }
  }
  return [...bits].sort((a, b) => a - b)
}

/**
 * True when the signature at `bytes[offset, offset + SIGNATURE_BYTES)` has every bit of `bits`.
 *
 * @param bytes - Holds the signature.
 * @param offset - Where it starts.
 * @param bits - From {@link fragmentBits}.
 */
export function signatureHas(bytes: Uint8Array, offset: number, bits: readonly number[]): boolean {
  for (const bit of bits) if ((bytes[offset + (bit >>> 3)]! & (1 << (bit & 7))) === 0) return false
  return true
}
