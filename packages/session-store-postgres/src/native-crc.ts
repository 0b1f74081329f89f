/**
 * The native CRC-32C this backend offers the core (`SessionBackend.crc32c`): the core's own is
 * pure TypeScript (it runs anywhere); on Node the backend brings `@node-rs/crc32`'s.
 */
import { crc32c } from '@node-rs/crc32'

/**
 * CRC-32C (Castagnoli) of `bytes`, native.
 *
 * @param bytes - The bytes to hash (not kept).
 * @returns The checksum as an unsigned 32-bit integer.
 */
export function nativeCrc32c(bytes: Uint8Array): number {
  return crc32c(bytes) >>> 0
}
