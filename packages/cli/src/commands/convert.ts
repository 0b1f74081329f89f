import type { BackendCapabilities, BackendProgress, SessionStore } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { requireFiles, resolveTarget, STORE_OPTION } from '../store-target.ts'
import { formatBytes, terminalSafe } from '../terminal-text.ts'

function progressSink(progress: Progress): (report: BackendProgress) => void {
  return (report) => {
    progress.total = report.total ?? null
    progress.update(report.done, report.phase)
  }
}

/**
 * A maintenance capability of the store's backend (`migrate`, `compress`).
 *
 * @param command - The command, for the message.
 * @param store - The session's store.
 * @param name - The capability.
 * @returns It.
 * @throws {@link CliError} `UNSUPPORTED_BACKEND` when the backend has none.
 */
function capability<TName extends 'migrate' | 'compress'>(
  command: string,
  store: SessionStore,
  name: TName,
): NonNullable<BackendCapabilities[TName]> {
  const found = store.backend.capabilities[name]
  if (found !== undefined) return found
  throw new CliError({
    code: CliErrorCode.UNSUPPORTED_BACKEND,
    message: `${command} needs the ${name} capability, found the ${store.backend.name} backend without it`,
    details: { command, capability: name },
  })
}

function describeResult(result: unknown): string {
  if (typeof result !== 'object' || result === null) return ''
  const parts: string[] = []
  for (const [key, value] of Object.entries(result)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      parts.push(`${key}=${terminalSafe(String(value))}`)
    }
  }
  return parts.join(' ')
}

/** The fields of the store's compress result this summary reads (checked at run time). */
interface CompressFields {
  readonly outcome?: unknown
  readonly file?: unknown
  readonly removedFile?: unknown
  readonly plainBytes?: unknown
  readonly compressedBytes?: unknown
  readonly frames?: unknown
}

/**
 * One sentence about a compression, for people: sizes in kB/MB, how many times smaller, the
 * file written and the one removed.
 *
 * @param id - The session.
 * @param result - The store's result.
 */
function compressSummary(id: string, result: unknown): string {
  const fields = (typeof result === 'object' && result !== null ? result : {}) as CompressFields
  const name = terminalSafe(id)
  const file = typeof fields.file === 'string' ? terminalSafe(fields.file) : 'the .zstd log'
  const plain = typeof fields.plainBytes === 'number' ? fields.plainBytes : null
  const packed = typeof fields.compressedBytes === 'number' ? fields.compressedBytes : null
  if (fields.outcome === 'up-to-date') return `${name} is already compressed (${file}): nothing to do`
  const sizes =
    plain === null || packed === null
      ? ''
      : `: ${formatBytes(plain)} -> ${formatBytes(packed)} (${packed === 0 ? 'empty' : `${(plain / packed).toFixed(1)} times smaller`}${typeof fields.frames === 'number' ? `, ${fields.frames} frame${fields.frames === 1 ? '' : 's'}` : ''})`
  const removed =
    typeof fields.removedFile === 'string' ? `; removed ${terminalSafe(fields.removedFile)}` : ''
  const verb = fields.outcome === 'resealed' ? 'resealed' : 'compressed'
  return `${verb} ${name}${sizes} into ${file}${removed}`
}

async function printResult(
  context: CommandContext,
  request: { readonly json: boolean; readonly verb: string; readonly id: string; readonly result: unknown },
): Promise<void> {
  if (request.json) {
    await context.out.write(`${stringifyJson({ session: request.id, result: request.result ?? null })}\n`)
    return
  }
  const details = describeResult(request.result)
  await context.out.write(
    `${request.verb} ${terminalSafe(request.id)}${details === '' ? '' : `: ${details}`}\n`,
  )
}

const MIGRATE_HELP = `Usage: agent-ledger migrate <session> [--dry-run] [--json] [--no-progress]

Migrates a session's current generation (session.jsonl = v0, session.vN.jsonl) to the
current format, v4, as a NEW generation file session.v4.jsonl: written to a temp file,
fsynced, verified, published with link() (never overwriting), then the directory is
fsynced. The old generation is never modified. --dry-run migrates in memory, checks
everything and writes nothing.

Options:
  --dry-run       check and migrate in memory only; write nothing
  --json          print the store's result as JSON
  --no-progress   no progress lines on stderr
  --store S       a store directory (<session> is then a session id in it); a PostgreSQL
                  store is refused with UNSUPPORTED_BACKEND: this command works on files
  -h, --help      show this help

Exit codes:
  0  migrated (or nothing to do, or the dry run passed)
  1  refused: the source is damaged, holds an unknown event type, or is too new
  2  usage or I/O error
`

/** `agent-ledger migrate`: write the current-format generation. */
export const migrateCommand: CommandSpec = {
  name: 'migrate',
  summary: 'migrate an older generation to the current format (new file; the old one is untouched)',
  help: MIGRATE_HELP,
  options: {
    'dry-run': { type: 'boolean' },
    json: JSON_OPTION,
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  positionals: ['<session>'],
  async run(context, args) {
    const target = await resolveTarget(context, args)
    const location = requireFiles('migrate', target)
    const migrate = capability('migrate', target.store, 'migrate')
    const dryRun = flag(args, 'dry-run')
    const progress = new Progress(context.io, {
      label: 'migrate',
      unit: 'bytes',
      total: null,
      enabled: context.progressEnabled,
    })
    const { details: result = {} } = await migrate.migrate(location.id, {
      dryRun,
      onProgress: progressSink(progress),
    })
    const upToDate = result['outcome'] === 'up-to-date'
    await printResult(context, {
      json: flag(args, 'json'),
      verb: dryRun ? 'dry run passed for' : upToDate ? 'nothing to migrate in' : 'migrated',
      id: location.id,
      result,
    })
    return ExitCode.OK
  },
}

const COMPRESS_HELP = `Usage: agent-ledger compress <session> [--json] [--no-progress]

Converts a cold session's plain log (session.v4.jsonl) to its Zstandard encoding
(session.v4.jsonl.zstd, readable by the stock zstd tool): the compressed file is
written, verified and published by link(), then the plain file is removed. A reader
that finds both encodings with the same events reads either; an interrupted conversion
is finished by the next write open.

Output: one sentence, e.g.
  compressed demo: 11.4 kB -> 2.6 kB (4.3 times smaller, 2 frames) into demo/session.v4.jsonl.zstd; removed demo/session.v4.jsonl

Options:
  --json          {"session", "result": the store's CompressResult}
  --no-progress   no progress lines on stderr
  --store S       a store directory (<session> is then a session id in it); a PostgreSQL
                  store is refused with UNSUPPORTED_BACKEND: this command works on files
  -h, --help      show this help

Exit codes:
  0  compressed
  1  refused: the log is damaged, locked by a writer, or too new
  2  usage or I/O error
`

/** `agent-ledger compress`: the zstd encoding of a cold session. */
export const compressCommand: CommandSpec = {
  name: 'compress',
  summary: 'convert a cold session to its zstd encoding (new file, verified; the plain log is removed)',
  help: COMPRESS_HELP,
  options: { json: JSON_OPTION, 'no-progress': NO_PROGRESS_OPTION, store: STORE_OPTION },
  positionals: ['<session>'],
  async run(context, args) {
    const target = await resolveTarget(context, args)
    const location = requireFiles('compress', target)
    const compress = capability('compress', target.store, 'compress')
    const progress = new Progress(context.io, {
      label: 'compress',
      unit: 'bytes',
      total: null,
      enabled: context.progressEnabled,
    })
    const { details: result } = await compress.compress(location.id, { onProgress: progressSink(progress) })
    if (flag(args, 'json')) {
      await printResult(context, { json: true, verb: 'compressed', id: location.id, result })
    } else {
      await context.out.write(`${compressSummary(location.id, result)}\n`)
    }
    return ExitCode.OK
  },
}
