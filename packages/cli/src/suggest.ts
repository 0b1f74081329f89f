/**
 * The optimal-string-alignment distance (Damerau-Levenshtein without repeated edits of one
 * substring): insertions, deletions, substitutions and swaps of two adjacent characters.
 *
 * @param a - One word.
 * @param b - The other.
 * @returns The number of edits from `a` to `b`.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      }
      rows[i]![j] = best
    }
  }
  return rows[a.length]![b.length]!
}

/**
 * The candidate nearest to a misspelt word, when it is near enough to be what was meant:
 * at most 2 edits, and fewer edits than the word has characters (`x` suggests nothing).
 *
 * @param word - What was typed.
 * @param candidates - The known words, in preference order for ties.
 * @returns The suggestion, or undefined.
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: { readonly candidate: string; readonly distance: number } | undefined
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate)
    if (best === undefined || distance < best.distance) best = { candidate, distance }
  }
  if (best === undefined || best.distance > 2 || best.distance >= word.length) return undefined
  return best.candidate
}
