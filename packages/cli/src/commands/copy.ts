import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionBackend, SessionStore as CoreStore } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, exitCodeOf, formatErrorLine } from '../report-error.ts'
import { resolveRoot } from '../session-path.ts'
import { openStore } from '../open-store.ts'
import type { StoreSpec } from '../open-store.ts'
import { listAllSessions, parseStoreSpec } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger copy <from> <to> [--session <id>] [--json] [--no-progress]

Copies sessions between two stores, losslessly: <from> and <to> are each a store
directory (JSONL) or a postgres:// / postgresql:// URL, in any combination. Without
--session every session of <from> is copied; with it, that one session.

Each event is copied as its exact stored line (checksum included): a session copied
JSONL -> PostgreSQL -> JSONL has byte-identical lines, and forks keep their parentSession
(parents are copied before their forks). For each session:
  1. the source is verified (every line: checksum, dense seq, types, rules); a damaged
     session is not copied (reported, exit 1; "agent-ledger salvage" it first); a torn
     tail (never acknowledged) is left behind with a warning;
  2. a target session with the same id is compared line by line: identical -> skipped
     (so copy is idempotent and can be re-run after an interruption); different ->
     refused with TARGET_EXISTS, nothing written (exit 1);
  3. the session is streamed into one create, batch by batch, and published whole
     at its end (a JSONL target stages it in a temp file, PostgreSQL in one
     transaction): a copy interrupted at any point leaves the target session
     complete or absent;
  4. the target is verified and read back, and its lines compared with the source's
     (COPY_MISMATCH otherwise).
A live session can be copied: what was durable when it was verified is copied.
Memory holds one batch of lines, not the session (sources are read as streams).

A PostgreSQL target's schema is migrated first (as "agent-ledger db migrate"); a
PostgreSQL source must already be current. Passwords in URLs are never printed.

Options:
  --session <id>   copy only this session
  --json           one JSON report on stdout: {from, to, sessions: [{id, action, events,
                   parentSession, error}], copied, identical, failed}
  --no-progress    no progress lines on stderr (printed every second for long copies)
  -h, --help       show this help

Exit codes:
  0  every session copied or already identical in the target
  1  a session was damaged, or its id is taken in the target by other content
     (TARGET_EXISTS), or did not read back identically (COPY_MISMATCH); the others
     were still copied
  2  usage or I/O error (a store cannot be opened, --session names no session)
`

/** What happened to one session. */
interface CopyOutcome {
  readonly id: string
  readonly action: 'copied' | 'identical' | 'failed'
  readonly events: number
  readonly parentSession: string | null
  readonly error: unknown
}

/** Both ends of a copy. */
interface CopyEnds {
  readonly from: { readonly spec: StoreSpec; readonly backend: SessionBackend; readonly store: CoreStore }
  readonly to: { readonly spec: StoreSpec; readonly backend: SessionBackend; readonly store: CoreStore }
  readonly signal: AbortSignal | undefined
}

/** Lines per batch of a streamed copy (and bytes, whichever comes first). */
const COPY_BATCH_LINES = 1024
const COPY_BATCH_BYTES = 4 * 1024 * 1024

/** A session's durable lines `0..toSeq` as batches, read as a stream (memory: one batch). */
async function* lineBatches(
  backend: SessionBackend,
  id: string,
  options: { readonly toSeq: number; readonly signal: AbortSignal | undefined },
): AsyncGenerator<string[], void, undefined> {
  let batch: string[] = []
  let bytes = 0
  for await (const stored of backend.read(id, { fromSeq: 0, toSeq: options.toSeq, signal: options.signal })) {
    batch.push(stored.line)
    bytes += stored.line.length
    if (batch.length >= COPY_BATCH_LINES || bytes >= COPY_BATCH_BYTES) {
      yield batch
      batch = []
      bytes = 0
    }
  }
  if (batch.length > 0) yield batch
}

/**
 * The first difference between two sessions' header lines and lines `0..toSeq` (the
 * target's lines past it count as a difference), in words, or null when identical. Both are
 * read as streams, side by side.
 */
async function difference(
  from: SessionBackend,
  to: SessionBackend,
  session: { readonly id: string; readonly toSeq: number; readonly signal: AbortSignal | undefined },
): Promise<string | null> {
  const { id, toSeq, signal } = session
  const [a, b] = await Promise.all([from.readHeader(id, { signal }), to.readHeader(id, { signal })])
  if (a.line !== b.line) return 'the header lines differ'
  const source = from.read(id, { fromSeq: 0, toSeq, signal })[Symbol.asyncIterator]()
  const target = to.read(id, { fromSeq: 0, signal })[Symbol.asyncIterator]()
  try {
    for (let seq = 0; ; seq += 1) {
      const [left, right] = await Promise.all([
        seq <= toSeq ? source.next() : Promise.resolve({ done: true as const, value: undefined }),
        target.next(),
      ])
      if (left.done === true && right.done === true) return null
      if (left.done === true || right.done === true) {
        const count = async (iterator: AsyncIterator<unknown>, from: number): Promise<number> => {
          let n = from
          while ((await iterator.next()).done !== true) n += 1
          return n
        }
        const sourceCount = left.done === true ? seq : await count(source, seq + 1)
        const targetCount = right.done === true ? seq : await count(target, seq + 1)
        return `the source has ${sourceCount} events, the target ${targetCount}`
      }
      if (left.value.line !== right.value.line) return `the lines of seq ${seq} differ`
    }
  } finally {
    await source.return?.()
    await target.return?.()
  }
}

async function exists(
  backend: SessionBackend,
  id: string,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  try {
    await backend.readHeader(id, { signal })
    return true
  } catch (error) {
    if (SessionStoreError.is(error, 'SESSION_NOT_FOUND')) return false
    throw error
  }
}

/** Copies one session (see the help text for the steps). */
async function copySession(context: CommandContext, ends: CopyEnds, id: string): Promise<CopyOutcome> {
  const { from, to, signal } = ends
  const verified = await from.store.verify(id, { signal })
  const parentSession = verified.header?.parentSession ?? null
  if (verified.status === 'damaged' || verified.header === null) {
    return { id, action: 'failed', events: verified.events, parentSession, error: verified.damage }
  }
  // What was verified is what is copied: a live session's later lines stay behind.
  const toSeq = verified.lastSeq
  const events = toSeq + 1
  if (verified.tornTail !== null) {
    context.notice(
      'warning',
      `${id}: the source ends with a torn tail (${verified.tornTail.bytes} bytes, never acknowledged): left behind; ${events} events copied`,
    )
  }
  if (await exists(to.backend, id, signal)) {
    const differs = await difference(from.backend, to.backend, { id, toSeq, signal })
    if (differs === null) return { id, action: 'identical', events, parentSession, error: null }
    const error = new CliError({
      code: CliErrorCode.TARGET_EXISTS,
      exitCode: ExitCode.DAMAGE,
      message: `session ${id} already exists in ${to.spec.shown} with other content (${differs}): expected no session or an identical one; nothing was written (delete or rename the target session, or copy into another store)`,
      details: { session: id, store: to.spec.shown, difference: differs },
    })
    return { id, action: 'failed', events, parentSession, error }
  }
  const header = await from.backend.readHeader(id, { signal })
  // Streamed into one create: the target stages every batch and publishes the session once.
  await to.backend.create({
    id,
    headerLine: header.line,
    header: verified.header,
    lines: events === 0 ? [] : lineBatches(from.backend, id, { toSeq, signal }),
    ...(events === 0 ? { lastCrc: null } : {}),
    signal,
  })
  const check = await to.store.verify(id, { signal })
  const differs =
    check.status !== 'ok'
      ? `the target verifies as ${check.status}${check.damage === null ? '' : ` (${check.damage.code})`}`
      : await difference(from.backend, to.backend, { id, toSeq, signal })
  if (differs !== null) {
    const error = new CliError({
      code: CliErrorCode.COPY_MISMATCH,
      exitCode: ExitCode.DAMAGE,
      message: `session ${id} was written to ${to.spec.shown} but does not read back as the source: ${differs}`,
      details: { session: id, store: to.spec.shown, difference: differs },
    })
    return { id, action: 'failed', events, parentSession, error }
  }
  return { id, action: 'copied', events, parentSession, error: null }
}

/** Ids in an order that puts every parent (when it is copied too) before its forks. */
function parentsFirst(
  sessions: readonly { readonly id: string; readonly parent: string | null }[],
): string[] {
  const byId = new Map(sessions.map((session) => [session.id, session.parent]))
  const ordered: string[] = []
  const placed = new Set<string>()
  const place = (id: string, depth: number): void => {
    if (placed.has(id)) return
    const parent = byId.get(id) ?? null
    if (parent !== null && byId.has(parent) && depth < sessions.length) place(parent, depth + 1)
    placed.add(id)
    ordered.push(id)
  }
  for (const session of [...sessions].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    place(session.id, 0)
  }
  return ordered
}

function sameStore(from: StoreSpec, to: StoreSpec): boolean {
  if (from.kind === 'jsonl' && to.kind === 'jsonl') return from.root === to.root
  return from.kind === 'postgres' && to.kind === 'postgres' && from.shown === to.shown
}

async function runCopy(
  context: CommandContext,
  specs: { readonly from: StoreSpec; readonly to: StoreSpec },
  options: { readonly session: string | undefined; readonly json: boolean },
): Promise<number> {
  // The source's schema is never migrated (a read); the target's is.
  const fromStore = await openStore(specs.from, context.storeOptions({ migrate: false }))
  context.adopt(fromStore)
  const toStore = await openStore(specs.to, context.storeOptions({ migrate: true }))
  context.adopt(toStore)
  const ends: CopyEnds = {
    from: { spec: specs.from, backend: fromStore.backend, store: fromStore },
    to: { spec: specs.to, backend: toStore.backend, store: toStore },
    signal: context.io.signal,
  }
  const outcomes: CopyOutcome[] = []
  let ids: string[]
  if (options.session !== undefined) ids = [options.session]
  else {
    const listing = await listAllSessions(fromStore)
    for (const problem of listing.problems) {
      outcomes.push({
        id: problem.id,
        action: 'failed',
        events: 0,
        parentSession: null,
        error: problem.error,
      })
    }
    ids = parentsFirst(
      listing.sessions.map((session) => ({ id: session.id, parent: session.header.parentSession ?? null })),
    )
  }
  const progress = new Progress(context.io, {
    label: 'copy',
    unit: 'events',
    total: null,
    enabled: context.progressEnabled,
  })
  let events = 0
  for (const [index, id] of ids.entries()) {
    let outcome: CopyOutcome
    try {
      outcome = await copySession(context, ends, id)
    } catch (error) {
      // One session named: its error is the command's (SESSION_NOT_FOUND exits 2).
      if (options.session !== undefined) throw error
      outcome = { id, action: 'failed', events: 0, parentSession: null, error }
    }
    outcomes.push(outcome)
    events += outcome.action === 'copied' ? outcome.events : 0
    progress.update(events, `${index + 1}/${ids.length} sessions`)
    if (!options.json) {
      if (outcome.action === 'copied') {
        await context.out.write(`copied ${terminalSafe(id)}: ${outcome.events} events\n`)
      } else if (outcome.action === 'identical') {
        await context.out.write(`skipped ${terminalSafe(id)}: already identical in the target\n`)
      }
    }
  }
  const failed = outcomes.filter((outcome) => outcome.action === 'failed')
  const copied = outcomes.filter((outcome) => outcome.action === 'copied').length
  const identical = outcomes.filter((outcome) => outcome.action === 'identical').length
  if (options.json) {
    await context.out.write(
      `${stringifyJson(
        {
          from: specs.from.shown,
          to: specs.to.shown,
          sessions: outcomes.map((outcome) => ({
            id: outcome.id,
            action: outcome.action,
            events: outcome.events,
            parentSession: outcome.parentSession,
            error: outcome.error === null ? null : errorJson(outcome.error, context.errorContext),
          })),
          copied,
          identical,
          failed: failed.length,
        },
        2,
      )}\n`,
    )
  } else {
    await context.out.write(
      `copied ${copied} session${copied === 1 ? '' : 's'} (${events} events) from ${terminalSafe(specs.from.shown)} to ${terminalSafe(specs.to.shown)}; ${identical} already identical; ${failed.length} failed\n`,
    )
  }
  await context.out.flush()
  for (const outcome of failed) {
    context.io.stderr(
      formatErrorLine(outcome.error, context.errorContext).replace(
        /^agent-ledger: /,
        `agent-ledger: ${terminalSafe(outcome.id)} not copied: `,
      ),
    )
  }
  if (failed.length === 0) return ExitCode.OK
  return failed.some((outcome) => exitCodeOf(outcome.error) === ExitCode.DAMAGE)
    ? ExitCode.DAMAGE
    : ExitCode.USAGE
}

/** `agent-ledger copy`: sessions between stores (JSONL and PostgreSQL), line for line. */
export const copyCommand: CommandSpec = {
  name: 'copy',
  summary: 'copy one session or a whole store between JSONL and PostgreSQL, byte-identical lines',
  help: HELP,
  options: { session: { type: 'string' }, json: JSON_OPTION, 'no-progress': NO_PROGRESS_OPTION },
  writes: true,
  positionals: ['<from>', '<to>'],
  async run(context, args) {
    const from = parseStoreSpec(args.positionals[0]!, context.cwd)
    const to = parseStoreSpec(args.positionals[1]!, context.cwd)
    if (sameStore(from, to)) {
      throw usageError(`copy: expected two different stores, found ${from.shown} twice`)
    }
    // A source directory must exist and be a store root (not a session directory).
    if (from.kind === 'jsonl') {
      await resolveRoot(from.root, context.cwd)
      // Damage in a source log is named by its file (relative to the root in the store's errors).
      context.root = from.root
    }
    return runCopy(context, { from, to }, { session: text(args, 'session'), json: flag(args, 'json') })
  },
}
