/**
 * The one script of `agent-ledger serve`, served at `/static/app.js` (never inline;
 * it reads no session text, it only moves the server's escaped HTML into the page).
 * - `#seq-N` (a search hit's link): scrolls to event N, or loads the page holding it.
 * - The last page of a session: opens the live feed (server-sent events at `<page>/live`),
 *   appends each batch of newly written events, and shows the "live" marker.
 */
export const APP_SCRIPT = `'use strict'
;(() => {
  const bar = document.getElementById('serve')
  const jump = () => {
    const found = /^#seq-(\\d+)$/.exec(location.hash)
    if (found === null) return
    const target = document.getElementById('e' + found[1])
    if (target !== null) target.scrollIntoView()
    else if (bar !== null && new URLSearchParams(location.search).get('seq') !== found[1])
      location.replace(location.pathname + '?seq=' + found[1] + location.hash)
  }
  jump()
  window.addEventListener('hashchange', jump)
  if (bar === null || bar.dataset.live !== '1') return
  const marker = document.getElementById('live')
  const main = document.querySelector('body > main')
  const show = (state, text) => {
    marker.dataset.state = state
    marker.textContent = text
  }
  let last = Number(bar.dataset.lastSeq)
  const feed = new EventSource(location.pathname + '/live?after=' + last)
  feed.addEventListener('open', () => show('live', 'live'))
  feed.addEventListener('error', () => show('offline', 'offline, reconnecting'))
  feed.addEventListener('append', (message) => {
    const update = JSON.parse(message.data)
    if (typeof update.lastSeq !== 'number' || update.lastSeq <= last) return
    main.insertAdjacentHTML('beforeend', update.html)
    last = update.lastSeq
    bar.dataset.lastSeq = String(last)
    show('live', 'live: #' + last)
  })
})()
`
