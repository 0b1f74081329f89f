/**
 * `agent-ledger serve` in-process for the tests: started through `runCli` on a free port,
 * its URL read from stdout, stopped through the io signal; and raw HTTP requests that may
 * carry any Host or Origin header (fetch would refuse to set Host).
 */
import { request } from 'node:http'

import { runCli } from '../../src/index.ts'
import type { CliIo } from '../../src/index.ts'
import { waitUntil } from '../../../../tooling/test-time.ts'

/** A running server. */
export interface RunningServe {
  /** The printed URL (`http://127.0.0.1:PORT/?token=...`). */
  readonly url: URL
  readonly token: string
  /** `127.0.0.1:PORT`. */
  readonly host: string
  readonly port: number
  /** Stops it and resolves the command's exit code. */
  stop(): Promise<number>
  readonly stderr: () => string
}

/**
 * Starts `agent-ledger serve ARGS --port 0` in this process.
 *
 * @param args - The arguments after `serve` (the store), without `--port`.
 * @param io - Extra io fields.
 */
export async function startServe(args: readonly string[], io: Partial<CliIo> = {}): Promise<RunningServe> {
  const controller = new AbortController()
  let stdout = ''
  let stderr = ''
  const state: { exit: number | null } = { exit: null }
  const done = runCli(['serve', ...args, '--port', '0'], {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    signal: controller.signal,
    ...io,
  }).then((code) => {
    state.exit = code
    return code
  })
  await waitUntil('serve prints its URL', () => state.exit !== null || /http:\/\/\S+/.test(stdout))
  if (state.exit !== null) throw new Error(`serve exited ${state.exit}: ${stderr}`)
  const url = new URL(/http:\/\/\S+/.exec(stdout)![0])
  return {
    url,
    token: url.searchParams.get('token')!,
    host: url.host,
    port: Number(url.port),
    stderr: () => stderr,
    stop: async () => {
      controller.abort()
      return done
    },
  }
}

/** A response as the tests read it. */
export interface RawResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
}

/**
 * One HTTP request to the server, headers exactly as given (`host` included).
 *
 * @param serve - The server.
 * @param path - Path and query.
 * @param options - Method and headers; `host` defaults to the server's own.
 */
export function raw(
  serve: Pick<RunningServe, 'port' | 'host'>,
  path: string,
  options: { readonly method?: string; readonly headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: serve.port,
        path,
        method: options.method ?? 'GET',
        headers: { host: serve.host, ...options.headers },
      },
      (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (body += chunk))
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }))
        response.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** An open live feed: what it received so far. */
export interface Feed {
  readonly status: number
  received(): string
  close(): void
}

/**
 * Opens a server-sent-events feed and collects what arrives.
 *
 * @param serve - The server.
 * @param path - The feed's path (`/session/<id>/live?after=N`).
 * @param headers - The token's header or cookie.
 */
export function openFeed(
  serve: Pick<RunningServe, 'port' | 'host'>,
  path: string,
  headers: Record<string, string>,
): Promise<Feed> {
  return new Promise((resolve, reject) => {
    let received = ''
    const req = request({
      host: '127.0.0.1',
      port: serve.port,
      path,
      headers: { host: serve.host, ...headers },
    })
    req.on('response', (response) => {
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (received += chunk))
      response.on('error', () => undefined)
      resolve({ status: response.statusCode!, received: () => received, close: () => req.destroy() })
    })
    req.on('error', reject)
    req.end()
  })
}

/** The `append` updates a feed received: the HTML and last seq of each. */
export function feedUpdates(received: string): { readonly html: string; readonly lastSeq: number }[] {
  return [...received.matchAll(/event: append\ndata: (.*)\n/g)].map(
    (match) => JSON.parse(match[1]!) as { html: string; lastSeq: number },
  )
}
