import { lineCrc, SessionStoreError } from '@agent-ledger/session-store'
import type { SessionBackend, SessionStore as CoreStore } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, exitCodeOf, formatErrorLine } from '../report-error.ts'
import { resolveRoot } from '../session-path.ts'
import { coreStore, openBackend } from '../open-store.ts'
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
  3. the session is published whole in one create (header and every line at once: a
     copy interrupted at any point leaves the target session complete or absent);
  4. the target is verified and read back, and its lines compared with the source's
     (COPY_MISMATCH otherwise).
A live session can be copied: what was durable when it was read is copied.
A session is held in memory while it is copied (its lines, once).

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

/** The header line and every durable line of a session, from a backend. */
async function readLines(
  backend: SessionBackend,
  id: string,
  signal: AbortSignal | undefined,
): Promise<{ readonly headerLine: string; readonly lines: string[] }> {
  const header = await backend.readHeader(id, { signal })
  const lines: string[] = []
  for await (const stored of backend.read(id, { fromSeq: 0, signal })) lines.push(stored.line)
  return { headerLine: header.line, lines }
}

/** The first difference between two sessions' lines, in words, or null when identical. */
function difference(
  source: { readonly headerLine: string; readonly lines: readonly string[] },
  target: { readonly headerLine: string; readonly lines: readonly string[] },
): string | null {
  if (source.headerLine !== target.headerLine) return 'the header lines differ'
  const common = Math.min(source.lines.length, target.lines.length)
  for (let seq = 0; seq < common; seq += 1) {
    if (source.lines[seq] !== target.lines[seq]) return `the lines of seq ${seq} differ`
  }
  if (source.lines.length !== target.lines.length) {
    return `the source has ${source.lines.length} events, the target ${target.lines.length}`
  }
  return null
}

/** Copies one session (see the help text for the steps). */
async function copySession(context: CommandContext, ends: CopyEnds, id: string): Promise<CopyOutcome> {
  const { from, to, signal } = ends
  const verified = await from.store.verify(id, { signal })
  const parentSession = verified.header?.parentSession ?? null
  if (verified.status === 'damaged' || verified.header === null) {
    return { id, action: 'failed', events: verified.events, parentSession, error: verified.damage }
  }
  const source = await readLines(from.backend, id, signal)
  if (verified.tornTail !== null) {
    context.notice(
      'warning',
      `${id}: the source ends with a torn tail (${verified.tornTail.bytes} bytes, never acknowledged): left behind; ${source.lines.length} events copied`,
    )
  }
  const existing = await readLines(to.backend, id, signal).catch((error: unknown) => {
    if (SessionStoreError.is(error, 'SESSION_NOT_FOUND')) return null
    throw error
  })
  if (existing !== null) {
    const differs = difference(source, existing)
    if (differs === null) {
      return { id, action: 'identical', events: source.lines.length, parentSession, error: null }
    }
    const error = new CliError({
      code: CliErrorCode.TARGET_EXISTS,
      exitCode: ExitCode.DAMAGE,
      message: `session ${id} already exists in ${to.spec.shown} with other content (${differs}): expected no session or an identical one; nothing was written (delete or rename the target session, or copy into another store)`,
      details: { session: id, store: to.spec.shown, difference: differs },
    })
    return { id, action: 'failed', events: source.lines.length, parentSession, error }
  }
  await to.backend.create({
    id,
    headerLine: source.headerLine,
    header: verified.header,
    lines: source.lines,
    lastCrc: source.lines.length === 0 ? null : lineCrc(source.lines.at(-1)!),
    signal,
  })
  const check = await to.store.verify(id, { signal })
  const copied = await readLines(to.backend, id, signal)
  const differs =
    check.status !== 'ok'
      ? `the target verifies as ${check.status}${check.damage === null ? '' : ` (${check.damage.code})`}`
      : difference(source, copied)
  if (differs !== null) {
    const error = new CliError({
      code: CliErrorCode.COPY_MISMATCH,
      exitCode: ExitCode.DAMAGE,
      message: `session ${id} was written to ${to.spec.shown} but does not read back as the source: ${differs}`,
      details: { session: id, store: to.spec.shown, difference: differs },
    })
    return { id, action: 'failed', events: source.lines.length, parentSession, error }
  }
  return { id, action: 'copied', events: source.lines.length, parentSession, error: null }
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
  const clock = (): string => context.clock()
  const fromBackend = await openBackend(specs.from, { migrate: false })
  const fromStore = coreStore(fromBackend, clock)
  context.adopt(fromStore)
  const toBackend = await openBackend(specs.to, { migrate: true })
  const toStore = coreStore(toBackend, clock)
  context.adopt(toStore)
  const ends: CopyEnds = {
    from: { spec: specs.from, backend: fromBackend, store: fromStore },
    to: { spec: specs.to, backend: toBackend, store: toStore },
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
