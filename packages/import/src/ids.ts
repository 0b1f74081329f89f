/**
 * Session ids derived from source ids. Never cut an id short (two sub-agents `acompact-<hex>`
 * of one session would share a prefix): an id too long for its budget keeps its head and
 * ends with a digest of the whole, so two different ids stay different.
 */

/** cyrb53 of `text` with `seed` (53 bits): a fast non-cryptographic string hash. */
export function cyrb53(text: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed
  let h2 = 0x41c6ce57 ^ seed
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    h1 = Math.imul(h1 ^ code, 2654435761)
    h2 = Math.imul(h2 ^ code, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

/** A 106-bit digest of `text` in base 36 (two seeded cyrb53, 11 characters each). */
function idDigest(text: string): string {
  return [1, 2].map((seed) => cyrb53(text, seed).toString(36).padStart(11, '0')).join('')
}

/** `id` itself when it has at most `max` characters, else its head, `-` and {@link idDigest} of all of it. */
export function fitId(id: string, max: number): string {
  if (id.length <= max) return id
  const digest = idDigest(id)
  return `${id.slice(0, max - digest.length - 1).replace(/-+$/, '')}-${digest}`
}

/** A source id as a part of a session id key: its letters and digits, whole. */
export function keyPart(id: string): string {
  return id.replace(/[^A-Za-z0-9]/g, '')
}
