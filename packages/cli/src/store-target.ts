import { lstat } from 'node:fs/promises'
import { join, resolve } from 'node:path'

import type { SessionStore, SessionStoreError, SessionSummary } from '@agent-ledger/session-store'
import { describeConnection } from '@agent-ledger/session-store-postgres'

import { text } from './args.ts'
import type { OptionSpec, ParsedArgs } from './args.ts'
import { CliError, CliErrorCode, usageError } from './cli-error.ts'
import type { CommandContext } from './context.ts'
import type { SessionTarget, StoreSpec } from './open-store.ts'
import { displayPath, jsonlStoreAt, resolveSession } from './session-path.ts'
import type { SessionLocation } from './session-path.ts'

/** The environment variable read when `--store` is not given. */
export const STORE_ENV = 'AGENT_LEDGER_STORE'

/** `--store <url|dir>`: the store a command works on. */
export const STORE_OPTION: OptionSpec = { type: 'string' }

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i
const OTHER_URL = /^([a-z][a-z0-9+.-]*):\/\//i

/**
 * Reads a store argument: a `postgres://`/`postgresql://` URL or a directory (a JSONL store root).
 *
 * @param value - As typed (or from the environment).
 * @param cwd - The working directory (a relative directory is resolved against it).
 * @returns The store.
 * @throws {@link CliError} `USAGE` for an empty value or a URL of another scheme.
 */
export function parseStoreSpec(value: string, cwd: string): StoreSpec {
  if (value === '') throw usageError('expected a store (a directory or a postgres:// URL), found ""')
  if (POSTGRES_URL.test(value)) {
    return { kind: 'postgres', url: value, shown: `postgres ${describeConnection(value)}` }
  }
  const scheme = OTHER_URL.exec(value)?.[1]
  if (scheme !== undefined) {
    throw usageError(
      `expected a store directory or a postgres:// / postgresql:// URL, found a ${scheme}:// URL`,
    )
  }
  const root = resolve(cwd, value)
  return { kind: 'jsonl', root, shown: displayPath(root, cwd) }
}

/**
 * The store a command was pointed at: `--store`, else `AGENT_LEDGER_STORE`, else none.
 *
 * @param context - The command's context (its environment).
 * @param args - The parsed arguments.
 * @returns The value and where it came from, or null.
 */
function storeArgument(
  context: CommandContext,
  args: ParsedArgs,
): { readonly value: string; readonly from: 'flag' | 'env' } | null {
  const flagged = text(args, 'store')
  if (flagged !== undefined) return { value: flagged, from: 'flag' }
  const env = context.env[STORE_ENV]
  return env === undefined || env === '' ? null : { value: env, from: 'env' }
}

/** True when a `<session>` argument names a path (a directory or file) rather than a bare session id. */
function looksLikePath(argument: string): boolean {
  return argument.includes('/') || argument.includes('\\') || argument === '.' || argument === '..'
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  )
}

/** `--store DIR` and an id with no session directory under DIR: the message names the id as an id, not a path. */
function sessionIdNotFound(id: string, store: string): CliError {
  return new CliError({
    code: CliErrorCode.NOT_A_SESSION,
    message: `session id ${JSON.stringify(id)} not found in store ${store}: expected a session directory ${JSON.stringify(id)} in it; run agent-ledger list ${store} for its sessions`,
    path: store,
    details: { id, store },
  })
}

/**
 * Resolves the `<session>` of a command against its store.
 *
 * Without a store (no `--store`, no `AGENT_LEDGER_STORE`), or with only the environment
 * variable and an argument that is a path, the argument is a session directory or log file
 * as always. Otherwise it is a session id in that store: a directory store reads
 * `<dir>/<id>`. Either way the target holds the core store of the session's store (over the
 * JSONL directory or the database). Memoized on the context (run-cli resolves it once
 * before the command runs).
 *
 * @param context - The command's context.
 * @param args - The parsed arguments (positional 0 is `<session>`).
 * @returns The target.
 * @throws {@link CliError} `USAGE` (a path given with `--store`), `NOT_A_SESSION`; the backend's connection errors.
 */
export async function resolveTarget(context: CommandContext, args: ParsedArgs): Promise<SessionTarget> {
  if (context.target !== null) return context.target
  const argument = args.positionals[0]!
  const store = storeArgument(context, args)
  let target: SessionTarget
  if (store === null || (store.from === 'env' && looksLikePath(argument))) {
    target = await directoryTarget(context, await resolveSession(argument, context))
  } else {
    if (looksLikePath(argument)) {
      throw usageError(
        `with --store, <session> is a session id in that store, found the path ${JSON.stringify(argument)}; give the id, or leave out --store to name a session directory`,
      )
    }
    const spec = parseStoreSpec(store.value, context.cwd)
    if (spec.kind === 'jsonl') {
      const directory = join(spec.root, argument)
      if (!(await exists(directory))) throw sessionIdNotFound(argument, spec.shown)
      target = await directoryTarget(context, await resolveSession(directory, context))
    } else {
      target = { id: argument, store: await context.store(spec), where: spec.shown, location: null }
    }
  }
  context.target = target
  return target
}

/** The target of a session directory: the store over its root, and its files. */
async function directoryTarget(context: CommandContext, location: SessionLocation): Promise<SessionTarget> {
  return {
    id: location.id,
    store: await jsonlStoreAt(context, location.root),
    where: displayPath(location.root, context.cwd),
    location,
  }
}

/**
 * Refuses a database store for a command that works on session files only.
 *
 * @param command - The command name.
 * @param target - The resolved target.
 * @returns The JSONL location.
 * @throws {@link CliError} `UNSUPPORTED_BACKEND` naming the command and the store.
 */
export function requireFiles(command: string, target: SessionTarget): SessionLocation {
  if (target.location !== null) return target.location
  throw new CliError({
    code: CliErrorCode.UNSUPPORTED_BACKEND,
    message: `${command} works on JSONL session files only, found the store ${target.where}: run it on a session directory, or copy the session to one first (agent-ledger copy <store> <dir> --session ${target.id})`,
    details: { command, store: target.where },
  })
}

/** A whole store a command works on (`list`, `stats`): its core store, and its root when it is a directory. */
export interface StoreScope {
  readonly store: SessionStore
  /** The store as messages show it: the root directory as displayed, or `postgres user@host:port/db`. */
  readonly where: string
  /** The root (absolute) of a directory store; null for a database. */
  readonly root: string | null
}

/**
 * The store of a command whose positional is optional once a store is given (`list`,
 * `stats`): `--store`, else `AGENT_LEDGER_STORE` when no positional was given.
 *
 * @param context - The command's context.
 * @param args - The parsed arguments.
 * @param command - The command name, for messages.
 * @returns The store, or null when the positional decides (no store, or only the environment variable and a path).
 * @throws {@link CliError} `USAGE` when neither a positional nor a store was given.
 */
export async function resolveScope(
  context: CommandContext,
  args: ParsedArgs,
  command: string,
): Promise<StoreScope | null> {
  const argument = args.positionals[0]
  const store = storeArgument(context, args)
  if (store === null || (store.from === 'env' && argument !== undefined && looksLikePath(argument))) {
    if (argument === undefined) {
      throw usageError(
        `${command}: expected a store root argument, --store <url|dir> or ${STORE_ENV}, found none; run agent-ledger ${command} --help`,
      )
    }
    return null
  }
  return scopeOf(context, parseStoreSpec(store.value, context.cwd))
}

/**
 * The store scope of a spec.
 *
 * @param context - The command's context.
 * @param spec - A directory or a database.
 * @returns Its store, where it is, and the root of a directory.
 */
export async function scopeOf(context: CommandContext, spec: StoreSpec): Promise<StoreScope> {
  return {
    store: await context.store(spec),
    where: spec.shown,
    root: spec.kind === 'jsonl' ? spec.root : null,
  }
}

/**
 * Every session of a core store, page by page (keyset pagination), most recently updated first.
 *
 * @param store - The core store.
 * @param onPage - Called after each page with the count so far (progress).
 * @returns The sessions and the problems (sessions that could not be summarized).
 */
export async function listAllSessions(
  store: SessionStore,
  onPage: (count: number) => void = () => undefined,
): Promise<{ sessions: SessionSummary[]; problems: { id: string; error: SessionStoreError }[] }> {
  const sessions: SessionSummary[] = []
  const problems: { id: string; error: SessionStoreError }[] = []
  let cursor: string | null = null
  do {
    const page = await store.list({
      limit: 1000,
      ...(cursor === null ? {} : { cursor }),
    })
    sessions.push(...page.sessions)
    problems.push(...page.problems)
    cursor = page.cursor
    onPage(sessions.length + problems.length)
  } while (cursor !== null)
  return { sessions, problems }
}

/** What a command taking `<session|root>` was pointed at through a store (`stats`). */
export type SessionOrStore =
  | { readonly kind: 'session'; readonly id: string; readonly store: SessionStore }
  | { readonly kind: 'store'; readonly scope: StoreScope }

/**
 * For `stats`: with a store (`--store`, or `AGENT_LEDGER_STORE` when the argument is not a
 * path), the argument is a session id in it, and without an argument the whole store is meant.
 *
 * @param context - The command's context.
 * @param args - The parsed arguments.
 * @param command - The command name, for messages.
 * @returns The session or store, or null when the argument is a path (today's behaviour).
 */
export async function resolveSessionOrStore(
  context: CommandContext,
  args: ParsedArgs,
  command: string,
): Promise<SessionOrStore | null> {
  const argument = args.positionals[0]
  if (argument === undefined) {
    const scope = await resolveScope(context, args, command)
    return scope === null ? null : { kind: 'store', scope }
  }
  const store = storeArgument(context, args)
  if (store === null || (store.from === 'env' && looksLikePath(argument))) return null
  const target = await resolveTarget(context, args)
  return { kind: 'session', id: target.id, store: target.store }
}
