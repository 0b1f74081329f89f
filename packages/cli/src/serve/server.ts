/**
 * The HTTP server of `agent-ledger serve` on `node:http`: the request guard first (Host,
 * Origin, token), then GET routes only (the app is read-only): the list `/`, a session
 * `/session/<id>` and its live feed `/session/<id>/live` (server-sent events fed by
 * `store.follow`), the search `/search`, and the app script.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'

import type { ErrorContext } from '../report-error.ts'
import { escapeHtml } from '../transcript/html/text.ts'
import { Catalog } from './catalog.ts'
import { APP_SCRIPT } from './client.ts'
import { APP_SCRIPT_PATH, appPage } from './layout.ts'
import { listPage, listQueryOf, searchPage } from './pages.ts'
import { COMMON_HEADERS, refuse, RequestGuard } from './security.ts'
import { liveFragment, sessionPage } from './session-page.ts'

/** Hits on one page of the search. */
const SEARCH_PAGE_SIZE = 50
/** A comment on an idle live feed this often keeps proxies and the browser from timing it out. */
const KEEPALIVE_MS = 20_000

/** What the server serves and how it names it. */
export interface ServeOptions {
  readonly store: SessionStore
  /** True for a directory store (log sizes in the list). */
  readonly files: boolean
  /** The store as pages name it. */
  readonly where: string
  readonly host: string
  readonly port: number
  readonly token: string
  readonly clock: () => string
  readonly errorContext: ErrorContext
  /** Ends every live feed when it aborts (the server is closing). */
  readonly signal: AbortSignal
}

function send(
  response: ServerResponse,
  answer: { readonly status: number; readonly type: string; readonly body: string },
): void {
  response.writeHead(answer.status, { ...COMMON_HEADERS, 'content-type': answer.type })
  response.end(answer.body)
}

function sendHtml(response: ServerResponse, status: number, html: string): void {
  send(response, { status, type: 'text/html; charset=utf-8', body: html })
}

function seqParam(url: URL, name: string): number | null {
  const value = url.searchParams.get(name)
  if (value === null || !/^\d{1,15}$/.test(value)) return null
  return Number(value)
}

/** The server's handler, bound to one store and guard. */
class App {
  readonly #options: ServeOptions
  readonly #guard: RequestGuard
  readonly #catalog: Catalog

  constructor(options: ServeOptions, guard: RequestGuard) {
    this.#options = options
    this.#guard = guard
    this.#catalog = new Catalog(options.store, options.files)
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://serve.invalid')
    const verdict = this.#guard.check(request, url)
    if ('status' in verdict) {
      refuse(response, verdict)
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { ...COMMON_HEADERS, allow: 'GET, HEAD', 'content-type': 'text/plain' })
      response.end('Method not allowed: agent-ledger serve is read-only\n')
      return
    }
    if (verdict.fromQuery) {
      // The token moves into a cookie, and out of the address bar and the history.
      url.searchParams.delete('token')
      response.writeHead(303, {
        ...COMMON_HEADERS,
        'set-cookie': this.#guard.cookie(),
        location: `${url.pathname}${url.search}`,
      })
      response.end()
      return
    }
    try {
      await this.#route(request, response, url)
    } catch (error) {
      if (response.headersSent) {
        response.destroy()
        return
      }
      if (
        SessionStoreError.is(
          error,
          SessionStoreErrorCode.SESSION_NOT_FOUND,
          SessionStoreErrorCode.INVALID_SESSION_ID,
        )
      ) {
        sendHtml(response, 404, appPage('Not found', `<p>${escapeHtml(error.message)}</p>`))
        return
      }
      const code = SessionStoreError.is(error) ? error.code : 'INTERNAL'
      const message = error instanceof Error ? error.message : String(error)
      sendHtml(
        response,
        500,
        appPage('Error', `<p><code>${escapeHtml(code)}</code> ${escapeHtml(message)}</p>`),
      )
    }
  }

  async #route(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname
    if (path === APP_SCRIPT_PATH) {
      send(response, { status: 200, type: 'text/javascript; charset=utf-8', body: APP_SCRIPT })
      return
    }
    if (path === '/') {
      const query = listQueryOf(url)
      const page = await this.#catalog.page(query, this.#options.signal)
      sendHtml(response, 200, listPage(query, page, this.#options.where))
      return
    }
    if (path === '/search') {
      await this.#search(response, url)
      return
    }
    const session = /^\/session\/([^/]+)(\/live)?$/.exec(path)
    if (session !== null) {
      let id: string
      try {
        id = decodeURIComponent(session[1]!)
      } catch {
        sendHtml(response, 404, appPage('Not found', '<p>That is not a session id.</p>'))
        return
      }
      if (session[2] !== undefined) {
        await this.#live(request, response, { id, after: seqParam(url, 'after') ?? -1 })
        return
      }
      const html = await sessionPage(this.#options.store, {
        id,
        from: seqParam(url, 'from'),
        seq: seqParam(url, 'seq'),
        forks: await this.#catalog.forksOf(id),
        clock: this.#options.clock,
        errorContext: this.#options.errorContext,
      })
      sendHtml(response, 200, html)
      return
    }
    sendHtml(response, 404, appPage('Not found', `<p>Nothing at <code>${escapeHtml(path)}</code>.</p>`))
  }

  async #search(response: ServerResponse, url: URL): Promise<void> {
    const query = (url.searchParams.get('q') ?? '').trim()
    if (query === '') {
      sendHtml(response, 200, searchPage('', null))
      return
    }
    const cursor = url.searchParams.get('cursor')
    // A query the store refuses (too long, a cursor it did not make) is the page's message, not a 500.
    let result
    try {
      result = await this.#options.store.search(query, {
        limit: SEARCH_PAGE_SIZE,
        ...(cursor === null || cursor === '' ? {} : { cursor }),
        signal: this.#options.signal,
      })
    } catch (error) {
      if (!SessionStoreError.is(error, SessionStoreErrorCode.INVALID_OPTION)) throw error
      sendHtml(response, 400, searchPage(query, null, error.message))
      return
    }
    sendHtml(response, 200, searchPage(query, result))
  }

  /**
   * The live feed of a session: `append` events carrying the HTML of the events written after
   * `after` (or after the browser's `Last-Event-ID` on a reconnect), until the browser leaves
   * or the server closes.
   */
  async #live(
    request: IncomingMessage,
    response: ServerResponse,
    { id, after }: { readonly id: string; readonly after: number },
  ): Promise<void> {
    const lastEventId = Number(request.headers['last-event-id'])
    let sent = Number.isSafeInteger(lastEventId) ? Math.max(after, lastEventId) : after
    const stop = new AbortController()
    const abort = (): void => stop.abort()
    this.#options.signal.addEventListener('abort', abort, { once: true })
    response.on('close', abort)
    // Fails here (before the headers) when the session does not exist.
    await this.#options.store.backend.readHeader(id)
    response.writeHead(200, {
      ...COMMON_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    })
    response.write(': agent-ledger live feed\n\n')
    const keepalive = setInterval(() => response.write(': keepalive\n\n'), KEEPALIVE_MS)
    keepalive.unref()
    let head = sent
    let flushing: Promise<void> | null = null
    const flush = async (): Promise<void> => {
      while (head > sent && !stop.signal.aborted) {
        const { html, lastSeq } = await liveFragment(this.#options.store, id, sent)
        if (lastSeq <= sent) break
        sent = lastSeq
        response.write(`id: ${lastSeq}\nevent: append\ndata: ${JSON.stringify({ html, lastSeq })}\n\n`)
      }
    }
    try {
      for await (const event of this.#options.store.follow(id, { fromSeq: sent + 1, signal: stop.signal })) {
        head = event.seq
        // One render per burst of appends: events that land while one renders join the next.
        flushing ??= (async () => {
          await new Promise((resolve) => setImmediate(resolve))
          await flush()
          flushing = null
        })().catch(() => stop.abort())
      }
      await flushing
    } finally {
      clearInterval(keepalive)
      this.#options.signal.removeEventListener('abort', abort)
      response.end()
    }
  }
}

/**
 * Starts the server and waits until it listens.
 *
 * @param options - Store, address, token, clock.
 * @returns The server and the port it listens on (the one asked for, or the one the system chose for 0).
 * @throws the listen error (`EADDRINUSE`, `EACCES`...).
 */
export async function startServer(options: ServeOptions): Promise<{ server: Server; port: number }> {
  let app: App | null = null
  const server = createServer((request, response) => {
    void app!.handle(request, response)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : options.port
  app = new App({ ...options, port }, new RequestGuard({ host: options.host, port, token: options.token }))
  return { server, port }
}
