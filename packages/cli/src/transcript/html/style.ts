/**
 * The page's only stylesheet (inline; the CSP allows nothing else). Light by default, dark
 * under `prefers-color-scheme: dark`; the index sits in a sticky side column on wide
 * screens and above the events on narrow ones (it comes last in the document, so the
 * renderer can list only what it rendered).
 */
export const STYLE = `
:root { color-scheme: light dark;
  --bg: #f9fafb; --fg: #111827; --card: #ffffff; --muted: #6b7280; --line: #d1d5db; --code: #f3f4f6;
  --link: #1d4ed8; --user: #2563eb; --assistant: #059669; --system: #7c3aed; --tool: #6b7280;
  --error: #dc2626; --error-bg: #fef2f2; --error-fg: #991b1b; --warn: #f97316; --warn-bg: #fff7ed; --warn-fg: #9a3412;
  --accent: #6366f1; --accent-bg: #eef2ff; --accent-fg: #3730a3; --fork: #0ea5e9; --fork-bg: #f0f9ff; --badge: #e5e7eb; }
@media (prefers-color-scheme: dark) { :root {
  --bg: #0f172a; --fg: #e5e7eb; --card: #111c33; --muted: #94a3b8; --line: #334155; --code: #1e293b;
  --link: #93c5fd; --user: #60a5fa; --assistant: #34d399; --system: #a78bfa; --tool: #94a3b8;
  --error: #f87171; --error-bg: #3b1219; --error-fg: #fecaca; --warn: #fb923c; --warn-bg: #3a2110; --warn-fg: #fed7aa;
  --accent: #818cf8; --accent-bg: #1e1b4b; --accent-fg: #c7d2fe; --fork: #38bdf8; --fork-bg: #0c2a3d; --badge: #334155; } }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 84rem; padding: 1.5rem; color: var(--fg); background: var(--bg);
  display: grid; grid-template-columns: 17rem minmax(0, 1fr); grid-template-areas: "nav head" "nav main" "nav foot"; column-gap: 1.5rem; align-items: start; }
body > header { grid-area: head; }
body > main { grid-area: main; }
body > nav { grid-area: nav; position: sticky; top: 0; max-height: 100vh; overflow-y: auto; overflow-x: hidden; padding: .5rem 0; font-size: .85rem; }
body > footer { grid-area: foot; }
@media (max-width: 60rem) { body { grid-template-columns: minmax(0, 1fr); grid-template-areas: "head" "nav" "main" "foot"; }
  body > nav { position: static; max-height: 40vh; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; } }
nav h2 { font-size: .8rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: .9rem 0 .3rem; }
nav ol, nav ul { list-style: none; margin: 0; padding: 0; }
nav li { margin: .1rem 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
nav .jumps li { display: inline-block; margin-right: .6rem; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; word-break: break-all; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 1rem; font-size: .9rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; word-break: break-all; }
.skip { font-size: .85rem; }
section.summary { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; margin: 0 0 1rem; }
section.summary h2 { font-size: 1rem; margin: .2rem 0 .5rem; }
dl.stats { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 .75rem; font-size: .9rem; }
dl.stats dt { color: var(--muted); }
dl.stats dd { margin: 0; }
table.tools { border-collapse: collapse; font-size: .85rem; margin: 0 0 .75rem; }
table.tools th, table.tools td { border-bottom: 1px solid var(--line); padding: .15rem .75rem .15rem 0; text-align: right; }
table.tools th[scope="row"], table.tools th:first-child { text-align: left; }
figure.chart { margin: .5rem 0; }
figure.chart figcaption { font-size: .8rem; color: var(--muted); }
figure.chart svg { display: block; background: var(--code); border-radius: 4px; }
figure.chart .bar-input { fill: var(--user); }
figure.chart .bar-output { fill: var(--assistant); }
figure.chart .axis { stroke: var(--line); }
section.turn { border-left: 3px solid var(--line); padding-left: 1rem; margin: 1.25rem 0; }
section.turn > h2 { font-size: 1.05rem; margin: 1rem 0 .5rem; }
.event { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; margin: .6rem 0; }
.event > header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; font-size: .85rem; color: var(--muted); }
.event > header .role { font-weight: 600; color: var(--fg); }
.seq { font-family: ui-monospace, monospace; }
.note, .size { font-size: .85rem; color: var(--muted); margin: .35rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; margin: .4rem 0; padding: .5rem; background: var(--code); border-radius: 4px; }
.collapsible pre.preview { margin-bottom: 0; border-bottom-left-radius: 0; border-bottom-right-radius: 0; }
.collapsible pre.rest { margin-top: 0; border-top-left-radius: 0; border-top-right-radius: 0; }
details > summary { cursor: pointer; font-size: .85rem; color: var(--link); margin: .2rem 0; }
.markdown { overflow-wrap: anywhere; }
.markdown > :first-child { margin-top: .3rem; } .markdown > :last-child { margin-bottom: .3rem; }
.markdown code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--code); padding: 0 .2rem; border-radius: 3px; }
.markdown pre code { padding: 0; background: none; }
.markdown blockquote { margin: .4rem 0; padding-left: .8rem; border-left: 3px solid var(--line); color: var(--muted); }
.markdown table { border-collapse: collapse; } .markdown th, .markdown td { border: 1px solid var(--line); padding: .2rem .5rem; }
.role-user { border-left: 4px solid var(--user); }
.role-assistant { border-left: 4px solid var(--assistant); }
.role-system { border-left: 4px solid var(--system); }
.role-tool { border-left: 4px solid var(--tool); }
.error { border-left-color: var(--error); }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: 0 .4rem; border-radius: 999px; background: var(--badge); color: var(--fg); }
.badge.error { background: var(--error-bg); color: var(--error-fg); }
.badge.placeholder { background: var(--warn-bg); color: var(--warn-fg); }
.badge.hidden { color: var(--muted); }
.badge.summary { background: var(--accent-bg); color: var(--accent-fg); }
.placeholder-box { border: 2px solid var(--warn); background: var(--warn-bg); border-radius: 4px; padding: .35rem .6rem; margin: .4rem 0; font-size: .9rem; }
.hidden-event { opacity: .6; filter: grayscale(1); }
.compaction { border: 2px dashed var(--accent); background: var(--accent-bg); }
.summary-message { outline: 2px solid var(--accent); }
.calls { margin: .4rem 0 0; padding-left: 1.1rem; }
.calls li { margin: .3rem 0; }
.fork { border: 2px solid var(--fork); background: var(--fork-bg); }
.salvage, .damage, .budget { border: 2px solid var(--error); background: var(--error-bg); }
.truncated { font-size: .85rem; border-left: 3px solid var(--warn); padding-left: .5rem; margin: .35rem 0; }
.log-only { font-size: .85rem; color: var(--muted); margin: .3rem 0 .3rem .25rem; }
a { color: var(--link); }
:target { outline: 3px solid var(--warn); outline-offset: 2px; }
pre.diff { padding: .4rem 0; }
pre.diff span { display: block; padding: 0 .6rem; }
.diff-add { background: color-mix(in srgb, var(--assistant) 18%, transparent); }
.diff-del { background: color-mix(in srgb, var(--error) 18%, transparent); }
.diff-file { font-weight: 700; }
.diff-hunk { color: var(--muted); }
.call-result { border-left: 3px solid var(--line); padding-left: .5rem; margin: .3rem 0 .6rem; }
.call-result.error { border-left-color: var(--error); }
.call-result pre { margin: .2rem 0; }
`
