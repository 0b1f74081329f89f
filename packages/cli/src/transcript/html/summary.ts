import { duration } from '../../session-stats.ts'
import { countOf, formatCount } from '../../terminal-text.ts'
import type { SessionStats } from '../../session-stats.ts'
import { escapeHtml } from './text.ts'

/** Most bars a chart draws; longer sessions are drawn in buckets of consecutive turns. */
const MAX_BARS = 200
const CHART_WIDTH = 640
const CHART_HEIGHT = 120

function counts(record: Readonly<Record<string, number>>): string {
  const entries = Object.entries(record).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  return entries.length === 0
    ? 'none'
    : entries.map(([key, value]) => `${key} ${formatCount(value)}`).join(', ')
}

function percent(rate: number): string {
  return `${(rate * 100).toFixed(rate > 0 && rate < 0.1 ? 1 : 0)}%`
}

/** One bar: the turns it covers and its value. */
interface Bar {
  readonly first: number
  readonly last: number
  readonly value: number
}

function bars(stats: SessionStats, pick: (turn: SessionStats['perTurn'][number]) => number): Bar[] {
  const turns = stats.perTurn
  const size = Math.max(1, Math.ceil(turns.length / MAX_BARS))
  const result: Bar[] = []
  for (let index = 0; index < turns.length; index += size) {
    const bucket = turns.slice(index, index + size)
    result.push({
      first: bucket[0]!.turn,
      last: bucket.at(-1)!.turn,
      value: bucket.reduce((sum, turn) => sum + pick(turn), 0),
    })
  }
  return result
}

/**
 * A bar chart as inline SVG (no script, no external reference): one bar per turn (or per
 * bucket of turns), each with a `<title>` a reader sees on hover, the largest value on the
 * axis. Two charts, input and output, because input tokens dwarf output tokens.
 */
function chart(options: {
  readonly id: string
  readonly title: string
  readonly unit: string
  readonly className: string
  readonly bars: readonly Bar[]
}): string {
  const { bars: data } = options
  const largest = Math.max(0, ...data.map((bar) => bar.value))
  const max = Math.max(1, largest)
  const slot = CHART_WIDTH / Math.max(1, data.length)
  const width = Math.max(1, slot * 0.8)
  const rects = data
    .map((bar, index) => {
      const height = (bar.value / max) * (CHART_HEIGHT - 4)
      const turns = bar.first === bar.last ? `turn ${bar.first}` : `turns ${bar.first}-${bar.last}`
      return `<rect class="${options.className}" x="${(index * slot).toFixed(2)}" y="${(CHART_HEIGHT - height).toFixed(2)}" width="${width.toFixed(2)}" height="${height.toFixed(2)}"><title>${escapeHtml(`${turns}: ${formatCount(bar.value)} ${options.unit}`)}</title></rect>`
    })
    .join('')
  const first = data[0]?.first
  const last = data.at(-1)?.last
  const axis =
    first === undefined
      ? 'no turns'
      : `turn ${first}${last === first ? '' : ` to ${last}`}${data.length > 0 && data[0]!.first !== data[0]!.last ? ` (${data[0]!.last - data[0]!.first + 1} turns a bar)` : ''}`
  return [
    `<figure class="chart" aria-labelledby="${options.id}">`,
    `<figcaption id="${options.id}">${escapeHtml(options.title)}: ${largest === 0 ? 'none recorded' : `largest ${formatCount(largest)}`}; ${escapeHtml(axis)}</figcaption>`,
    `<svg viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}" width="100%" height="${CHART_HEIGHT}" preserveAspectRatio="none" role="img" aria-label="${escapeHtml(options.title)}">`,
    `<line class="axis" x1="0" y1="${CHART_HEIGHT - 0.5}" x2="${CHART_WIDTH}" y2="${CHART_HEIGHT - 0.5}"></line>`,
    rects,
    '</svg>',
    '</figure>',
  ].join('')
}

/**
 * The summary panel at the top of the HTML transcript: what `agent-ledger stats` prints for
 * the session (turns, messages, tool calls by name with their error rate, repairs by code,
 * compactions, tokens, duration) and the tokens per turn as two inline SVG bar charts.
 */
export function summaryPanel(stats: SessionStats): string {
  const messages = stats.messages
  const rows: [string, string][] = [
    ['turns', `${formatCount(stats.turns)} (${counts(stats.turnEnds)})`],
    [
      'messages',
      `${formatCount(messages.system + messages.user + messages.assistant + messages.tool)}: ${formatCount(messages.system)} system, ${formatCount(messages.user)} user, ${formatCount(messages.assistant)} assistant, ${formatCount(messages.tool)} tool`,
    ],
    [
      'tool calls',
      `${formatCount(stats.toolCalls)}, ${countOf(stats.toolErrors, 'error')} (${percent(stats.toolCalls === 0 ? 0 : stats.toolErrors / stats.toolCalls)})`,
    ],
    ['repairs', counts(stats.repairs)],
    ['compactions', formatCount(stats.compactions)],
    [
      'tokens',
      `${formatCount(stats.inputTokens)} input (${formatCount(stats.cachedTokens)} cached), ${formatCount(stats.outputTokens)} output`,
    ],
    ['duration', duration(stats.durationMs)],
  ]
  const tools = Object.entries(stats.tools).sort(
    (a, b) => b[1].calls - a[1].calls || a[0].localeCompare(b[0]),
  )
  const toolTable =
    tools.length === 0
      ? ''
      : [
          '<table class="tools"><thead><tr><th scope="col">tool</th><th scope="col">calls</th><th scope="col">errors</th><th scope="col">error rate</th></tr></thead><tbody>',
          ...tools.map(
            ([name, tool]) =>
              `<tr><th scope="row"><code>${escapeHtml(name)}</code></th><td>${formatCount(tool.calls)}</td><td>${formatCount(tool.errors)}</td><td>${percent(tool.errorRate)}</td></tr>`,
          ),
          '</tbody></table>',
        ].join('')
  const charts =
    stats.perTurn.length === 0
      ? ''
      : chart({
          id: 'chart-input',
          title: 'Input tokens per turn',
          unit: 'input tokens',
          className: 'bar-input',
          bars: bars(stats, (turn) => turn.inputTokens),
        }) +
        chart({
          id: 'chart-output',
          title: 'Output tokens per turn',
          unit: 'output tokens',
          className: 'bar-output',
          bars: bars(stats, (turn) => turn.outputTokens),
        })
  return [
    '<section class="summary" id="summary" aria-labelledby="summary-title">',
    '<h2 id="summary-title">Summary</h2>',
    `<dl class="stats">${rows.map(([key, value]) => `<dt>${escapeHtml(key)}</dt><dd>${escapeHtml(value)}</dd>`).join('')}</dl>`,
    toolTable,
    charts,
    '</section>',
  ].join('\n')
}
