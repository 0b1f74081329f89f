import { randomBytes } from 'node:crypto'
import { open, rename, stat, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'

import { NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { displayPath, ioError, resolveSession } from '../session-path.ts'
import type { SessionLocation } from '../session-path.ts'
import { analyze, logFileName, readHeader } from '../transcript/analyze.ts'
import { HtmlRenderer } from '../transcript/html.ts'
import { markdownRenderer } from '../transcript/markdown.ts'
import type { TranscriptRenderer } from '../transcript/render.ts'
import { viewEvent } from '../transcript/view.ts'
import { runProviderExport } from './export-provider.ts'

const HELP = `Usage: agent-ledger export <session> --format md|html|openai|anthropic [-o FILE] [--no-progress]

--format openai|anthropic writes the repaired projection (after compaction, with the
closers a resume would add applied in memory) as a provider request: the OpenAI chat
message array (reasoning_content dropped), or an Anthropic Messages API body (system
separate, tool_use / tool_result blocks, roles alternating); what could not be carried
over is counted in a note on stderr.

Writes a readable transcript of a session: every event in seq order, grouped by turn,
with user, assistant and system messages, each tool call with a link to its result
(paired by call id, per assistant message) and each result with a link back to its
call; repair placeholders (isError results with code TOOL_OUTCOME_UNKNOWN or
TOOL_NOT_STARTED) and compactions clearly marked; messages hidden by a compaction (the
log keeps them) shown greyed; fork points and salvage markers; unknown ignorable events
as JSON.

--format html gives ONE self-contained file: inline CSS, no scripts, no network (a
Content-Security-Policy forbids both), every piece of text from the log escaped (a tool
output holding <script> shows as text). --format md gives Markdown with untrusted text
only inside fenced blocks and code spans. Both make terminal control and bidi characters
visible as \\uXXXX.

Read-only. Reads the log twice (once to pair calls and find hidden messages, once to
render), so memory stays bounded by the pairing tables, not by the log.

Options:
  --format md|html   the output format (required)
  -o, --output FILE  write to FILE (replaced atomically) instead of stdout
  --no-progress      no progress lines on stderr
  -h, --help         show this help

Exit codes:
  0  exported
  1  the log is damaged: the good prefix is exported with the damage marked at its end
  2  usage or I/O error
`

/** Where rendered text goes: stdout, or a temp file renamed over FILE at the end. */
interface Sink {
  write(text: string): Promise<void>
  finish(): Promise<void>
  abort(): Promise<void>
}

async function fileSink(context: CommandContext, target: string): Promise<Sink> {
  const shown = displayPath(target, context.cwd)
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
        await rename(temp, target)
      } catch (error) {
        await handle.close().catch(() => undefined)
        await unlink(temp).catch(() => undefined)
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

async function runExport(
  context: CommandContext,
  location: SessionLocation,
  options: { readonly format: 'md' | 'html'; readonly output: string | undefined },
): Promise<number> {
  const scan = new Progress(context.io, {
    label: 'export (scan)',
    unit: 'bytes',
    total: null,
    enabled: context.progressEnabled,
  })
  scan.total = await stat(location.logFile).then(
    (stats) => stats.size,
    () => null,
  )
  let scanning = true
  const store = context.store(location.root, {
    path: location.logFile,
    onRead: (bytes) => {
      if (scanning) scan.update(bytes)
    },
  })
  const header = await readHeader(location.logFile, logFileName(location.id)).catch(() => null)
  const analysis = await analyze(store.readEvents(location.id), header, () => undefined)
  scanning = false
  const sink =
    options.output === undefined
      ? stdoutSink(context)
      : await fileSink(context, resolve(context.cwd, options.output))
  const renderer: TranscriptRenderer = options.format === 'html' ? new HtmlRenderer() : markdownRenderer
  const render = new Progress(context.io, {
    label: 'export (render)',
    unit: 'events',
    total: analysis.events,
    enabled: context.progressEnabled,
  })
  try {
    await sink.write(
      renderer.begin({
        id: location.id,
        header,
        file: displayPath(location.logFile, context.cwd),
        events: analysis.events,
        pending: analysis.pending.length,
        exportedAt: context.clock(),
      }),
    )
    let count = 0
    try {
      for await (const event of store.readEvents(location.id, { toSeq: analysis.events - 1 })) {
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
  if (options.output !== undefined) {
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
    format: { type: 'string' },
    output: { type: 'string', short: 'o' },
    'no-progress': NO_PROGRESS_OPTION,
  },
  positionals: ['<session>'],
  async run(context, args) {
    const format = text(args, 'format')
    if (format === 'openai' || format === 'anthropic') {
      const location = await resolveSession(args.positionals[0]!, context.cwd)
      return runProviderExport(context, location, { format, output: text(args, 'output') })
    }
    if (format !== 'md' && format !== 'html') {
      throw usageError(
        `export: expected --format md or --format html (or openai, anthropic), found ${format === undefined ? 'none' : JSON.stringify(format)}`,
      )
    }
    const location = await resolveSession(args.positionals[0]!, context.cwd)
    return runExport(context, location, { format, output: text(args, 'output') })
  },
}
