/**
 * The checks every request of `agent-ledger serve` passes before anything is read from the
 * store: the Host header names the address the server is bound to (DNS rebinding), no
 * foreign Origin (cross-site requests), and the per-run token (query parameter once, then a
 * cookie or a header). See docs/decisions/2026-12-02-serve-security.md.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isIP } from 'node:net'

/** The Content-Security-Policy of every response: nothing but the app's own script, styles inline, requests to itself. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** Headers every response carries (no CORS header is ever sent). */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
}

/** The header a script or tool may send the token in (besides `Authorization: Bearer`). */
const TOKEN_HEADER = 'x-agent-ledger-token'

/** A random per-run token: 32 bytes, URL-safe. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * True for a loopback host: `localhost`, `127.0.0.0/8` or `::1`.
 *
 * @param host - A host name or address as given to `--host`.
 */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (bare === 'localhost' || bare === '::1') return true
  return isIP(bare) === 4 && bare.startsWith('127.')
}

/** `host:port` as a Host header names it (`[::1]:8417` for an IPv6 address). */
export function hostPort(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`
}

/** Why a request was refused before it reached a page. */
export interface Refusal {
  readonly status: 400 | 401 | 403
  readonly reason: string
}

/** What the guard knows of the server: where it listens and its token. */
export interface GuardOptions {
  readonly host: string
  readonly port: number
  readonly token: string
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/**
 * The request guard of one server: checks Host, Origin and the token, and names the cookie.
 */
export class RequestGuard {
  readonly #token: string
  readonly #hosts: ReadonlySet<string>
  readonly #origins: ReadonlySet<string>
  /** The cookie's name carries the port: two servers on one host keep their own tokens. */
  readonly cookieName: string

  constructor(options: GuardOptions) {
    this.#token = options.token
    const hosts = new Set([hostPort(options.host, options.port)])
    // A loopback bind also answers to the other loopback spellings (no rebinding through them).
    if (isLoopback(options.host)) {
      hosts.add(hostPort('127.0.0.1', options.port))
      hosts.add(hostPort('localhost', options.port))
    }
    this.#hosts = hosts
    this.#origins = new Set([...hosts].map((host) => `http://${host}`))
    this.cookieName = `agent-ledger-token-${options.port}`
  }

  /**
   * Checks a request: Host, Origin, `Sec-Fetch-Site`, then the token.
   *
   * @param request - The request.
   * @param url - Its parsed URL.
   * @returns A refusal, or `{ fromQuery }` (true when the token came as `?token=`: the caller sets the cookie).
   */
  check(request: IncomingMessage, url: URL): Refusal | { readonly fromQuery: boolean } {
    const host = request.headers.host
    if (host === undefined || !this.#hosts.has(host.toLowerCase())) {
      return {
        status: 403,
        reason: `expected the Host header ${[...this.#hosts][0]}, found ${host ?? 'none'}`,
      }
    }
    const origin = request.headers.origin
    if (origin !== undefined && !this.#origins.has(origin.toLowerCase())) {
      return { status: 403, reason: `a request from another origin (${origin}) is refused` }
    }
    // A page of another port of this host is same-site (cookies go along): only the app's own pages and typed URLs pass.
    const site = request.headers['sec-fetch-site']
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      return { status: 403, reason: `a ${site} request is refused` }
    }
    const fromQuery = url.searchParams.get('token')
    const authorization = request.headers.authorization
    const bearer = authorization?.startsWith('Bearer ') === true ? authorization.slice(7) : undefined
    const header = request.headers[TOKEN_HEADER]
    const given =
      fromQuery ??
      bearer ??
      (typeof header === 'string' ? header : undefined) ??
      cookieValue(request.headers.cookie, this.cookieName)
    if (given === undefined || given === '') {
      return { status: 401, reason: 'this server needs the token printed when it started (the ?token= URL)' }
    }
    if (!sameText(given, this.#token)) return { status: 403, reason: 'wrong token' }
    return { fromQuery: fromQuery !== null }
  }

  /** The `Set-Cookie` value that carries the token from now on. */
  cookie(): string {
    return `${this.cookieName}=${this.#token}; HttpOnly; SameSite=Strict; Path=/`
  }
}

/**
 * Writes a refusal: the status and one plain-text line, no session content.
 *
 * @param response - The response.
 * @param refusal - Status and reason.
 */
export function refuse(response: ServerResponse, refusal: Refusal): void {
  response.writeHead(refusal.status, {
    ...COMMON_HEADERS,
    'content-type': 'text/plain; charset=utf-8',
    ...(refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="agent-ledger serve"' } : {}),
  })
  response.end(`${refusal.status === 401 ? 'Unauthorized' : 'Forbidden'}: ${refusal.reason}\n`)
}
