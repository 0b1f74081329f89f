/**
 * The frame of `agent-ledger serve`'s own pages (list, search): the transcript's stylesheet
 * plus the serve bar, the app script from its own URL, and links into sessions. Every text
 * from a store goes through `escapeHtml` (the export's escaping).
 */
import { STYLE } from '../transcript/html/style.ts'
import { escapeHtml } from '../transcript/html/text.ts'

/** Where the app's one script is served (the CSP allows `'self'` scripts only; none is inline). */
export const APP_SCRIPT_PATH = '/static/app.js'

/** The styles of the serve bar, the list and the search results (added to the transcript's). */
export const SERVE_STYLE = `
main [id], main section { scroll-margin-top: 4.5rem; }
body { grid-template-areas: "bar bar" "nav head" "nav main" "nav foot"; }
@media (max-width: 60rem) { body { grid-template-areas: "bar" "head" "nav" "main" "foot"; } }
.serve-bar { grid-area: bar; position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .5rem .75rem; margin-bottom: 1rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--card); font-size: .9rem; }
.serve-bar form.inline { display: inline-flex; gap: .35rem; align-items: center; margin: 0; }
.serve-bar input { font: inherit; padding: .15rem .35rem; }
.serve-bar input[type=number] { width: 6rem; }
.live { padding: .1rem .5rem; border-radius: 999px; font-weight: 600; background: var(--badge); }
.live[data-state=live] { background: #dc2626; color: #fff; }
.live[data-state=live]::before { content: "\\25CF  "; }
body.plain { display: block; max-width: 84rem; }
table.sessions { border-collapse: collapse; width: 100%; font-size: .9rem; background: var(--card); }
table.sessions th, table.sessions td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
table.sessions td.num { text-align: right; font-variant-numeric: tabular-nums; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: 0 0 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
form.filters input, form.filters select { font: inherit; padding: .15rem .35rem; }
.hits { list-style: none; padding: 0; }
.hits li { margin: 0 0 .75rem; padding: .5rem .75rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
.hits .snippet { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: .85rem; margin: .3rem 0 0; }
.hits mark { background: #fde047; color: #111; }
.pager { display: flex; gap: 1rem; margin: 1rem 0; }
`

/** The URL path of a session's page. */
export function sessionHref(id: string): string {
  return `/session/${encodeURIComponent(id)}`
}

/**
 * A whole page of the app: head (title, styles, the app script), the serve bar, `body`.
 *
 * @param title - Plain text (escaped here).
 * @param body - HTML (escaped by the caller).
 * @param search - The search box's value (plain text).
 */
export function appPage(title: string, body: string, search = ''): string {
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    `<title>${escapeHtml(title)} - agent-ledger</title>`,
    `<style>${STYLE}${SERVE_STYLE}</style>`,
    `<script src="${APP_SCRIPT_PATH}" defer></script>`,
    '</head>',
    '<body class="plain">',
    '<div class="serve-bar">',
    '<a href="/"><strong>agent-ledger</strong> sessions</a>',
    `<form class="inline" action="/search" method="get"><input type="search" name="q" value="${escapeHtml(search)}" placeholder="search every session" aria-label="search"> <button>search</button></form>`,
    '</div>',
    `<h1>${escapeHtml(title)}</h1>`,
    body,
    '</body>',
    '</html>',
    '',
  ].join('\n')
}
