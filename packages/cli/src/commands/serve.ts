import { text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { resolveRoot } from '../session-path.ts'
import { resolveScope, scopeOf, STORE_OPTION } from '../store-target.ts'
import { hostPort, isLoopback, randomToken } from '../serve/security.ts'
import { startServer } from '../serve/server.ts'

/** The port `serve` listens on unless `--port` says otherwise. */
const DEFAULT_PORT = 8417
/** The shortest `--token` accepted (a guessable token is no protection). */
const MIN_TOKEN_LENGTH = 16

const HELP = `Usage: agent-ledger serve <root> [--port N] [--host H --token T]
       agent-ledger serve --store <url|dir> [--port N] [--host H --token T]

A local session browser: the session list (filters, sorts, pages), each session as the
HTML transcript of "export --format html" in pages of 200 events with its stats, a live
view of sessions being written (server-sent events), and search across every session.
Read-only: the server has no route that changes a store.

It listens on 127.0.0.1 and prints its address once, with a random token made for this
run: http://127.0.0.1:PORT/?token=... Open that URL; the browser then keeps the token in
a cookie (HttpOnly, SameSite=Strict). Every request without the token gets 401, with a
wrong one 403, as does a request whose Host header is not the server's address (DNS
rebinding) or that comes from another origin. Stops on Ctrl+C (SIGINT).

Options:
  --store S     the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE
                when <root> is left out)
  --port N      the port (default ${DEFAULT_PORT}; 0 = any free port, printed)
  --host H      listen on H instead of 127.0.0.1; a host other than loopback needs --token
                (TOKEN_REQUIRED otherwise): anyone who can reach it and knows the token
                reads every session
  --token T     the token (at least ${MIN_TOKEN_LENGTH} characters) instead of a random one
  -h, --help    show this help

Exit codes:
  0  stopped by SIGINT
  2  usage or I/O error (TOKEN_REQUIRED, the port is taken, the store cannot be opened)
`

function portOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PORT
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw usageError(`serve: expected --port to be a port number 0-65535, found ${JSON.stringify(value)}`)
  }
  return Number(value)
}

/** `agent-ledger serve`: the local session browser. */
export const serveCommand: CommandSpec = {
  name: 'serve',
  summary: 'browse sessions in a local web app (list, transcript, live follow, search)',
  help: HELP,
  options: {
    store: STORE_OPTION,
    port: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string' },
  },
  positionals: ['<root>'],
  positionalsOptional: true,
  async run(context, args) {
    if (args.positionals.length > 0 && args.values['store'] !== undefined) {
      throw usageError('serve: expected either <root> or --store, found both; run agent-ledger serve --help')
    }
    const host = text(args, 'host') ?? '127.0.0.1'
    const given = text(args, 'token')
    if (!isLoopback(host) && given === undefined) {
      throw new CliError({
        code: CliErrorCode.TOKEN_REQUIRED,
        message: `serve: --host ${host} is not a loopback address, so it needs --token T (at least ${MIN_TOKEN_LENGTH} characters): anyone who can reach it would read every session`,
        details: { host },
      })
    }
    if (given !== undefined && given.length < MIN_TOKEN_LENGTH) {
      throw usageError(
        `serve: expected --token of at least ${MIN_TOKEN_LENGTH} characters, found ${given.length}`,
      )
    }
    const port = portOf(text(args, 'port'))
    const scope =
      (await resolveScope(context, args, 'serve')) ??
      (await scopeOf(context, {
        kind: 'jsonl',
        root: await resolveRoot(args.positionals[0]!, context.cwd),
        shown: args.positionals[0]!,
      }))
    const token = given ?? randomToken()
    const closing = new AbortController()
    let started
    try {
      started = await startServer({
        store: scope.store,
        files: scope.root !== null,
        where: scope.where,
        host,
        port,
        token,
        clock: () => context.clock(),
        errorContext: context.errorContext,
        signal: closing.signal,
      })
    } catch (error) {
      const code = (error as { code?: unknown }).code
      throw new CliError({
        code: CliErrorCode.IO_ERROR,
        message: `serve: cannot listen on ${hostPort(host, port)}: ${code === 'EADDRINUSE' ? 'the port is taken (try --port 0 for any free port)' : error instanceof Error ? error.message : String(error)}`,
        details: { host, port, cause: typeof code === 'string' ? code : 'unknown' },
        cause: error,
      })
    }
    const { server } = started
    const url = `http://${hostPort(host, started.port)}/?token=${encodeURIComponent(token)}`
    await context.out.write(`agent-ledger serve: ${url}\n`)
    await context.out.flush()
    context.notice('note', `serving ${scope.where} read-only; Ctrl+C stops`)
    const signal = context.io.signal
    await new Promise<void>((resolve) => {
      if (signal === undefined) return
      if (signal.aborted) resolve()
      else signal.addEventListener('abort', () => resolve(), { once: true })
    })
    closing.abort()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    return ExitCode.OK
  },
}
