import { escapeHtml } from './text.ts'

/** One entry of the index: a rendered element and its label. */
interface Landmark {
  readonly id: string
  readonly label: string
}

/** The groups the index jumps to, in display order. */
const GROUPS = [
  ['repairs', 'Repairs'],
  ['errors', 'Errors'],
  ['compactions', 'Compactions'],
  ['forks', 'Forks and salvages'],
  ['damage', 'Damage'],
  ['limit', 'Not shown'],
] as const

/** A group of the index. */
export type LandmarkGroup = (typeof GROUPS)[number][0]

/** Most entries listed per group (the page stays small on a huge session). */
const MAX_ENTRIES = 300

/**
 * Collects, while the renderer writes events, the turns and the notable events it wrote,
 * and renders them as the page's index. Only rendered elements are listed, so every
 * link of the index lands on an element of the page.
 */
export class Landmarks {
  readonly #turns: Landmark[] = []
  #moreTurns = 0
  #latestLabelled = true
  readonly #groups = new Map<LandmarkGroup, { entries: Landmark[]; more: number }>()

  /** Records a turn heading. */
  turn(id: string, label: string): void {
    if (this.#turns.length < MAX_ENTRIES) {
      this.#turns.push({ id, label })
      this.#latestLabelled = false
    } else {
      this.#moreTurns += 1
    }
  }

  /** Gives the latest turn a label when it has none yet (its first user words). */
  labelLatestTurn(words: string): void {
    const last = this.#turns.at(-1)
    if (last === undefined || this.#latestLabelled) return
    this.#latestLabelled = true
    this.#turns[this.#turns.length - 1] = { id: last.id, label: `${last.label}: ${words}` }
  }

  /** Records a notable event. */
  add(group: LandmarkGroup, id: string, label: string): void {
    const entry = this.#groups.get(group) ?? { entries: [], more: 0 }
    if (entry.entries.length < MAX_ENTRIES) entry.entries.push({ id, label })
    else entry.more += 1
    this.#groups.set(group, entry)
  }

  /** The index as a `<nav>`. */
  render(): string {
    const link = (entry: Landmark): string =>
      `<li><a href="#${entry.id}" title="${escapeHtml(entry.label)}">${escapeHtml(entry.label)}</a></li>`
    const more = (count: number, what: string): string =>
      count === 0 ? '' : `<li class="note">and ${count} more ${what} (not listed)</li>`
    const jumps: string[] = []
    const sections: string[] = []
    for (const [group, title] of GROUPS) {
      const entry = this.#groups.get(group)
      if (entry === undefined) continue
      const total = entry.entries.length + entry.more
      jumps.push(`<li><a href="#index-${group}">${title} (${total})</a></li>`)
      sections.push(
        `<h2 id="index-${group}">${title}</h2><ol>${entry.entries.map(link).join('')}${more(entry.more, title.toLowerCase())}</ol>`,
      )
    }
    const turns =
      this.#turns.length === 0
        ? '<p class="note">No turns.</p>'
        : `<ol>${this.#turns.map(link).join('')}${more(this.#moreTurns, 'turns')}</ol>`
    return [
      '<nav id="index" aria-label="Index">',
      `<h2>Jump to</h2><ul class="jumps">${jumps.length === 0 ? '<li class="note">no repairs, errors, compactions or forks</li>' : jumps.join('')}</ul>`,
      `<h2>Turns</h2>${turns}`,
      ...sections,
      '</nav>',
    ].join('\n')
  }
}
