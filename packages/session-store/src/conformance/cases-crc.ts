/**
 * Conformance cases: the CRC-32C a backend offers the core (`SessionBackend.crc32c`).
 */
import { crc32c } from '../crc32c.ts'
import { utf8, verifyLineChecksum } from '../line-codec.ts'
import { equal, ok } from './assert.ts'
import { lines, writeTurns } from './harness.ts'
import type { Case } from './harness.ts'

/** The CRC a backend offers is CRC-32C; the lines written with it verify with the core's pure one. */
export const CRC_CASES: readonly Case[] = [
  {
    title:
      'a CRC-32C the backend offers equals the core one (check value, every length to 80 bytes, non-ASCII)',
    run: ({ backend }) => {
      const offered = backend.crc32c
      if (offered === undefined) return Promise.resolve()
      equal(typeof offered, 'function', 'backend.crc32c')
      equal(offered(utf8('123456789')), 0xe3069283, 'the CRC-32C check value')
      const text = 'héllo ✓ 𝄞 {"crc":"0"} '.repeat(4)
      for (let length = 0; length <= 80; length += 1) {
        const bytes = utf8(text).subarray(0, length)
        equal(offered(bytes), crc32c(bytes), `CRC of the first ${length} bytes`)
      }
      return Promise.resolve()
    },
  },
  {
    title: 'every line the store wrote through the backend verifies with the core pure CRC-32C',
    run: async ({ store, backend, id }) => {
      const sid = id('crc')
      await writeTurns(store(), sid)
      const stored = await lines(backend, sid)
      ok(stored.length > 0, 'lines were written')
      for (const [seq, line] of stored.entries()) ok(verifyLineChecksum(line, crc32c), `line ${seq} verifies`)
      ok(verifyLineChecksum((await backend.readHeader(sid)).line, crc32c), 'the header line verifies')
    },
  },
]
