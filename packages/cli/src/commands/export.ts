import { randomBytes } from 'node:crypto'
import { link, lstat, open, rename, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'

import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'

import { flag, NO_PAGER_OPTION, NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { displayPath, ioError } from '../session-path.ts'
import type { SessionLocation } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import type { SessionTarget } from '../open-store.ts'
import { analyze } from '../transcript/analyze.ts'
import { StatsCounter } from '../session-stats.ts'
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'

import { PageSizer } from '../transcript/budget.ts'
import { EVENT_SHARE, HtmlRenderer, PAGE_BUDGET_BYTES } from '../transcript/html.ts'
import { MarkdownRenderer } from '../transcript/markdown.ts'
import type { TranscriptRenderer } from '../transcript/render.ts'
import { viewEvent } from '../transcript/view.ts'
import { runProviderExport } from './export-provider.ts'

/** Every `--format` the command accepts, what kind of output it is, and its line in the help. */
const FORMATS = {
  md: { kind: 'transcript', help: 'a readable Markdown transcript' },
  html: { kind: 'transcript', help: 'a readable transcript as ONE self-contained HTML file' },
  openai: { kind: 'provider', help: 'the repaired projection as an OpenAI chat message array' },
  anthropic: { kind: 'provider', help: 'the repaired projection as an Anthropic Messages API body' },
} as const
type ExportFormat = keyof typeof FORMATS
type FormatsOf<TKind> = {
  [F in ExportFormat]: (typeof FORMATS)[F]['kind'] extends TKind ? F : never
}[ExportFormat]

/** Every `--format` the command accepts, in the order help and errors list them. */
const EXPORT_FORMATS = Object.keys(FORMATS) as ExportFormat[]

const isFormat = (format: string | undefined): format is ExportFormat =>
  format !== undefined && Object.hasOwn(FORMATS, format)
const isTranscriptFormat = (format: string | undefined): format is FormatsOf<'transcript'> =>
  isFormat(format) && FORMATS[format].kind === 'transcript'
const isProviderFormat = (format: string | undefined): format is FormatsOf<'provider'> =>
  isFormat(format) && FORMATS[format].kind === 'provider'

const FORMAT_WIDTH = Math.max(...EXPORT_FORMATS.map((format) => format.length)) + 3
const FORMAT_LIST = EXPORT_FORMATS.join('|')

const HELP = `Usage: agent-ledger export <session> --format ${FORMAT_LIST} [-o FILE [--force]] [--source-records] [--no-progress] [--store <url|dir>]

Writes a session in one of these formats (--format, required):
${EXPORT_FORMATS.map((format) => `  ${format.padEnd(FORMAT_WIDTH)}${FORMATS[format].help}`).join('\n')}

md and html: every event in seq order, grouped by turn, with user, assistant and system
messages, each tool call with a link to its result (paired by call id, per assistant
message) and each result with a link back to its call; repair placeholders (isError
results with code TOOL_OUTCOME_UNKNOWN or TOOL_NOT_STARTED) and compactions clearly
marked; messages hidden by a compaction (the log keeps them) shown greyed; fork points
and salvage markers; unknown ignorable events as JSON. Each tool call shows the start of
its result; Claude Code Edit, MultiEdit and Write calls and Codex apply_patch calls are
shown as diffs. An imported session's import/source-record events (the source lines kept
verbatim) are hidden and counted at the top; --source-records shows them.

html is inline CSS, no scripts, no network (a Content-Security-Policy forbids both).
User and assistant text is rendered as Markdown with raw HTML off; every other text is
escaped (a tool output holding <script> shows as text). Long tool outputs and arguments
are collapsed behind their first lines; an index lists turns, repairs, errors,
compactions and forks; light and dark themes. The page keeps under 4.5 MB: long texts are
shortened first (the cap is planned on the first read and said at the top); only when even
short texts do not fit are events in the middle left out, never the last turns. A text cut
short, or the events left out, come with the command that prints them
(agent-ledger cat <session> --seq N, or --from N --to M). md keeps untrusted text only inside
fenced blocks and code spans. Both make terminal control and bidi characters visible
as \\uXXXX.

openai and anthropic: the repaired projection (after compaction, with the closers a
resume would add applied in memory) as a provider request: the OpenAI chat message
array (reasoning_content dropped), or an Anthropic Messages API body (system separate,
tool_use / tool_result blocks, roles alternating); what could not be carried over is
counted in a note on stderr.

Read-only. Reads the log twice (once to pair calls and find hidden messages, once to
render), so memory stays bounded by the pairing tables, not by the log.

Options:
  --format F         the output format, one of ${EXPORT_FORMATS.join(', ')} (required)
  -o, --output FILE  write to FILE instead of stdout (- is stdout).
                     FILE is created with mode 0600 (owner only), like the session
                     log it comes from: a transcript holds everything the session
                     saw; chmod it to share it. An existing FILE is refused
                     (OUTPUT_EXISTS) unless --force
  --force            with -o FILE: replace an existing FILE (atomically)
  --source-records   md and html: show the importer's import/source-record events
                     (hidden by default, counted at the top)
  --no-progress      no progress lines on stderr
  --store S          the store: a directory or a postgres:// URL (default
                     $AGENT_LEDGER_STORE); <session> is then a session id in it
  --no-pager         print directly, not through the pager (a terminal only)
  -h, --help         show this help

Exit codes:
  0  exported
  1  the log is damaged: the good prefix is exported with the damage marked at its end
  2  usage or I/O error, or -o FILE exists without --force (nothing written)
`

/** Where rendered text goes: stdout, or a temp file renamed over FILE at the end. */
interface Sink {
  write(text: string): Promise<void>
  finish(): Promise<void>
  abort(): Promise<void>
}

function outputExists(shown: string, cause?: unknown): CliError {
  return new CliError({
    code: CliErrorCode.OUTPUT_EXISTS,
    message: `export: refusing to overwrite ${shown}: expected no file there, found one; pass --force to replace it`,
    path: shown,
    ...(cause === undefined ? {} : { cause }),
  })
}

async function fileSink(
  context: CommandContext,
  target: string,
  options: { readonly force: boolean },
): Promise<Sink> {
  const shown = displayPath(target, context.cwd)
  // Refused before any work; the final link() refuses again if the file appears meanwhile.
  if (!options.force) {
    const existing = await lstat(target).catch((error: unknown) => {
      if ((error as { code?: unknown }).code === 'ENOENT') return null
      throw ioError(error, { path: shown, doing: 'write' })
    })
    if (existing !== null) throw outputExists(shown)
  }
  const temp = join(dirname(target), `.${basename(target)}.tmp-${randomBytes(8).toString('hex')}`)
  let handle: FileHandle
  try {
    handle = await open(temp, 'wx', 0o600)
  } catch (error) {
    throw ioError(error, { path: shown, doing: 'write' })
  }
  let pending: string[] = []
  let size = 0
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return
    const chunk = pending.join('')
    pending = []
    size = 0
    await handle.write(chunk)
  }
  return {
    async write(piece) {
      pending.push(piece)
      size += piece.length
      if (size >= 256 * 1024) await flush()
    },
    async finish() {
      try {
        await flush()
        await handle.sync()
        await handle.close()
        if (options.force) {
          await rename(temp, target)
        } else {
          // link() never replaces: a file created since the check is refused, not overwritten.
          await link(temp, target)
          await unlink(temp)
        }
      } catch (error) {
        await handle.close().catch(() => undefined)
        await unlink(temp).catch(() => undefined)
        if ((error as { code?: unknown }).code === 'EEXIST') throw outputExists(shown, error)
        throw ioError(error, { path: shown, doing: 'write' })
      }
    },
    async abort() {
      await handle.close().catch(() => undefined)
      await unlink(temp).catch(() => undefined)
    },
  }
}

function stdoutSink(context: CommandContext): Sink {
  return {
    write: (piece) => context.out.write(piece),
    finish: () => context.out.flush(),
    abort: () => context.out.flush(),
  }
}

/** What an export reads, from either kind of store. */
interface ExportSource {
  readonly id: string
  readEvents(range?: { readonly toSeq: number }): AsyncIterable<LoggedEvent>
  /** The header (null when the log has none that reads) and the log as displayed. */
  header(): Promise<{ readonly header: SessionHeader | null; readonly file: string }>
}

/** The header of a stored header line, for display (the read pass checks the line itself); also `serve`'s. */
export function headerOfLine(line: string): SessionHeader | null {
  try {
    const { crc: _crc, ...header } = JSON.parse(line) as SessionHeader & { crc?: unknown }
    return header
  } catch {
    return null
  }
}

/**
 * The log as an export names it: relative to the store root (`<id>/session.v4.jsonl`), else
 * only the session: a transcript shared with others never carries the machine's absolute
 * paths (home directory, user name).
 */
function storeRelative(location: SessionLocation, file: string | undefined, id: string): string {
  const path = relative(location.root, file === undefined ? location.logFile : join(location.root, file))
  return path === '' || path.startsWith('..') || isAbsolute(path)
    ? `session ${id}`
    : path.split(sep).join('/')
}

function exportSource(
  context: CommandContext,
  target: SessionTarget,
  onRead: (bytes: number) => void,
): { readonly source: ExportSource; readonly logBytes: number | null } {
  const { store, id, location } = target
  if (location !== null) context.watchReads(location.logFile, onRead)
  return {
    logBytes: location?.logBytes ?? null,
    source: {
      id,
      readEvents: (range) => store.readEvents(id, range),
      header: async () => {
        // The header line only; a refused header is reported by the scan as the damage it is.
        const stored = await store.backend.readHeader(id).catch(() => null)
        const file = stored?.location?.file
        return {
          header: stored === null ? null : headerOfLine(stored.line),
          file: location === null ? `session ${id}` : storeRelative(location, file, id),
        }
      },
    },
  }
}

async function runExport(
  context: CommandContext,
  target: SessionTarget,
  options: {
    readonly format: 'md' | 'html'
    readonly output: string | undefined
    readonly force: boolean
    readonly session: string
    readonly sourceRecords: boolean
  },
): Promise<number> {
  const scan = new Progress(context.io, {
    label: 'export (scan)',
    unit: 'bytes',
    total: null,
    enabled: context.progressEnabled,
  })
  let scanning = true
  const { source, logBytes } = exportSource(context, target, (bytes) => {
    if (scanning) scan.update(bytes)
  })
  scan.total = logBytes
  const { header, file } = await source.header()
  // The scan also counts what `stats` counts (the HTML summary panel).
  const counter = new StatsCounter(source.id)
  // The HTML page's budget is planned on this pass too (budget.ts).
  const sizer = new PageSizer({ showSourceRecords: options.sourceRecords })
  let sourceRecords = 0
  const counted = (async function* () {
    for await (const event of source.readEvents()) {
      counter.add(event)
      if (event.type === SOURCE_RECORD_EVENT_TYPE) sourceRecords += 1
      if (options.format === 'html') sizer.add(event)
      yield event
    }
  })()
  const analysis = await analyze(counted, header, () => undefined)
  scanning = false
  const toStdout = options.output === undefined || options.output === '-'
  const sink =
    toStdout || options.output === undefined
      ? stdoutSink(context)
      : await fileSink(context, resolve(context.cwd, options.output), { force: options.force })
  const renderer: TranscriptRenderer =
    options.format === 'html'
      ? new HtmlRenderer({ plan: sizer.plan(Math.floor(PAGE_BUDGET_BYTES * EVENT_SHARE)) })
      : new MarkdownRenderer()
  const render = new Progress(context.io, {
    label: 'export (render)',
    unit: 'events',
    total: analysis.events,
    enabled: context.progressEnabled,
  })
  try {
    await sink.write(
      renderer.begin({
        id: source.id,
        session: options.session,
        header,
        file,
        events: analysis.events,
        pending: analysis.pending.length,
        exportedAt: context.clock(),
        stats: counter.finish(),
        sourceRecords: { count: sourceRecords, shown: options.sourceRecords },
      }),
    )
    let count = 0
    try {
      for await (const event of source.readEvents({ toSeq: analysis.events - 1 })) {
        await sink.write(renderer.event(viewEvent(event, analysis)))
        count += 1
        render.update(count)
        if (count >= analysis.events) break
      }
    } catch (error) {
      // The first pass already recorded the damage; a second read stops at the same place.
      if (analysis.damage === null) throw error
    }
    const damage = analysis.damage === null ? null : errorJson(analysis.damage, context.errorContext)
    await sink.write(renderer.end({ damage }))
    await sink.finish()
  } catch (error) {
    await sink.abort()
    throw error
  }
  if (!toStdout && options.output !== undefined) {
    context.notice(
      'note',
      `wrote ${displayPath(resolve(context.cwd, options.output), context.cwd)} (${analysis.events} events)`,
    )
  }
  if (analysis.damage !== null) {
    context.io.stderr(formatErrorLine(analysis.damage, context.errorContext))
    return ExitCode.DAMAGE
  }
  return ExitCode.OK
}

/** `agent-ledger export`: a readable Markdown or self-contained HTML transcript. */
export const exportCommand: CommandSpec = {
  name: 'export',
  summary: 'readable transcript: Markdown, or one self-contained HTML file',
  help: HELP,
  streams: true,
  options: {
    'no-pager': NO_PAGER_OPTION,

    format: { type: 'string' },
    output: { type: 'string', short: 'o' },
    force: { type: 'boolean' },
    'source-records': { type: 'boolean' },
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  pages: (args) => text(args, 'output') === undefined || text(args, 'output') === '-',
  stdin: true,
  positionals: ['<session>'],
  async run(context, args) {
    const format = text(args, 'format')
    if (isProviderFormat(format)) {
      const target = await resolveTarget(context, args)
      return runProviderExport(context, target, { format, output: text(args, 'output') })
    }
    if (!isTranscriptFormat(format)) {
      throw usageError(
        `export: expected --format ${EXPORT_FORMATS.join(', ')}, found ${format === undefined ? 'none' : JSON.stringify(format)}`,
      )
    }
    const output = text(args, 'output')
    if (flag(args, 'force') && output === undefined) throw usageError('export: --force needs -o FILE')
    const target = await resolveTarget(context, args)
    // Checked before reading the log: nothing is scanned for an output that would be refused.
    if (output !== undefined && output !== '-' && !flag(args, 'force')) {
      const target = resolve(context.cwd, output)
      const exists = await lstat(target).then(
        () => true,
        () => false,
      )
      if (exists) throw outputExists(displayPath(target, context.cwd))
    }
    return runExport(context, target, {
      format,
      output,
      force: flag(args, 'force'),
      session: args.positionals[0]!,
      sourceRecords: flag(args, 'source-records'),
    })
  },
}
