/**
 * CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial and final XOR 0xFFFFFFFF),
 * table-driven, slicing-by-8. Pure TypeScript so the core runs anywhere (Node, browsers,
 * workers) without a native addon; a backend with a faster one injects it (the store's
 * `crc32c` option). See the README for why this is hand-written.
 */

/** A CRC-32C function over bytes, returning the checksum as an unsigned 32-bit integer. */
export type Crc32c = (bytes: Uint8Array) => number

const POLYNOMIAL = 0x82f63b78

/** 8 tables of 256 entries: table k gives the CRC of a byte followed by k zero bytes. */
const TABLES: Uint32Array = buildTables()

function buildTables(): Uint32Array {
  const tables = new Uint32Array(8 * 256)
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ POLYNOMIAL : crc >>> 1
    tables[byte] = crc >>> 0
  }
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = tables[byte]!
    for (let table = 1; table < 8; table += 1) {
      crc = tables[crc & 0xff]! ^ (crc >>> 8)
      tables[table * 256 + byte] = crc >>> 0
    }
  }
  return tables
}

/**
 * CRC-32C of `bytes`.
 *
 * @param bytes - The bytes to hash.
 * @returns The checksum as an unsigned 32-bit integer (`e3069283` hex for the ASCII `123456789`).
 */
export function crc32c(bytes: Uint8Array): number {
  const t = TABLES
  let crc = 0xffffffff
  let index = 0
  const length = bytes.length
  const end8 = length - (length % 8)
  while (index < end8) {
    const low =
      (crc ^
        (bytes[index]! |
          (bytes[index + 1]! << 8) |
          (bytes[index + 2]! << 16) |
          (bytes[index + 3]! << 24))) >>>
      0
    const high =
      bytes[index + 4]! | (bytes[index + 5]! << 8) | (bytes[index + 6]! << 16) | (bytes[index + 7]! << 24)
    crc =
      t[7 * 256 + (low & 0xff)]! ^
      t[6 * 256 + ((low >>> 8) & 0xff)]! ^
      t[5 * 256 + ((low >>> 16) & 0xff)]! ^
      t[4 * 256 + (low >>> 24)]! ^
      t[3 * 256 + (high & 0xff)]! ^
      t[2 * 256 + ((high >>> 8) & 0xff)]! ^
      t[256 + ((high >>> 16) & 0xff)]! ^
      t[high >>> 24]!
    index += 8
  }
  while (index < length) {
    crc = t[(crc ^ bytes[index]!) & 0xff]! ^ (crc >>> 8)
    index += 1
  }
  return (crc ^ 0xffffffff) >>> 0
}
