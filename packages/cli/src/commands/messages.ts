import { planRepairFromState } from '@agent-ledger/loop-repair'
import type { Projection, SurfaceNode } from '@agent-ledger/session-projection'

import { flag, JSON_OPTION, NO_PAGER_OPTION, NO_PROGRESS_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { contentText } from '../describe-event.ts'
import { Progress } from '../progress.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import type { SessionTarget } from '../open-store.ts'
import { terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger messages <session> [--repaired] [--json] [--store <url|dir>]

Prints the model-visible messages of a session, derived from its log exactly as the
next request would send them (OpenAI chat wire shape: role, content, tool_calls,
tool_call_id). Read-only: no lock, no repair.

A session that crashed with tool calls unanswered: the read-only view shows what the
projection holds now, and a note on stderr says how many calls are pending. The next
WRITE open (a resume, "agent-ledger compact", ...) first appends an isError placeholder
result for each (TOOL_OUTCOME_UNKNOWN when a tool/call was logged: the call may have run;
TOOL_NOT_STARTED when it was not) and closes the open turn. --repaired applies that same
plan in memory, without writing, to show what the model will receive after the resume.

A torn tail is left out (it was never acknowledged; the next write open drops it).
A damaged log is refused (exit 1): it cannot be resumed; salvage it first.

Options:
  --repaired      apply loop-repair's plan in memory (what the model sees after resume)
  --json          the message array as JSON, exactly as sent to the provider
  --no-progress   no progress lines on stderr
  --store S       the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                  <session> is then a session id in it
  --no-pager      print directly, not through the pager (a terminal only)
  -h, --help      show this help

Exit codes:
  0  printed
  1  the log is damaged or its header is refused
  2  usage or I/O error
`

function nodeText(node: SurfaceNode, index: number): string {
  const message = node.message
  const lines: string[] = []
  let title = `[${index}] ${message.role} (#${node.seq})`
  if (message.role === 'tool') title += ` answers ${terminalSafe(message.tool_call_id)}`
  lines.push(title)
  const body = contentText(message)
  if (body !== '') {
    for (const line of terminalSafe(body, { multiline: true }).split('\n')) lines.push(`    ${line}`)
  }
  if (message.role === 'assistant') {
    if (message.reasoning_content !== undefined && message.reasoning_content !== '') {
      lines.push(`    (reasoning: ${message.reasoning_content.length} characters)`)
    }
    for (const call of message.tool_calls ?? []) {
      lines.push(
        `    -> ${terminalSafe(call.function.name)}(${terminalSafe(call.id)}) ${terminalSafe(call.function.arguments)}`,
      )
    }
  }
  return lines.join('\n')
}

/** The read-only view of a session the message commands need, from either kind of store. */
export interface SessionView {
  readonly projection: Projection
  readonly pendingToolCalls: readonly unknown[]
  /** Unacknowledged bytes at the end (file stores), or null. */
  readonly tornTail: { readonly bytes: number; readonly offset: number | undefined } | null
}

/**
 * Opens a session read-only (no lease, no repair) and folds its projection; a file store's
 * reads are reported as progress when `progressLabel` is given.
 *
 * @param context - The command's context.
 * @param target - The session.
 * @param progressLabel - The label of progress lines, or null for none.
 * @returns The projection, the pending tool calls and a torn tail.
 */
export async function readSessionView(
  context: CommandContext,
  target: SessionTarget,
  progressLabel: string | null,
): Promise<SessionView> {
  const { location } = target
  const progress = new Progress(context.io, {
    label: progressLabel ?? '',
    unit: 'bytes',
    total: location?.logBytes ?? null,
    enabled: context.progressEnabled && progressLabel !== null && location !== null,
  })
  if (location !== null) context.watchReads(location.logFile, (bytes) => progress.update(bytes))
  const read = await target.store.openReader(target.id)
  const tail = read.tornTail
  return {
    projection: read.projection,
    pendingToolCalls: read.pendingToolCalls,
    tornTail: tail === null ? null : { bytes: tail.bytes, offset: tail.location?.offset },
  }
}

async function runMessages(
  context: CommandContext,
  target: SessionTarget,
  options: { readonly json: boolean; readonly repaired: boolean },
): Promise<number> {
  const read = await readSessionView(context, target, 'messages')
  const projection = read.projection
  const pending = read.pendingToolCalls.length
  let repairedEvents = 0
  if (options.repaired) {
    const plan = planRepairFromState(projection.repairState, {
      nextSeq: projection.nextSeq,
      time: context.clock(),
    })
    for (const event of plan.events) projection.apply(event)
    repairedEvents = plan.events.length
  }
  const surface = projection.surface()
  if (options.json) {
    await context.out.write(`${stringifyJson(projection.deriveMessages(), 2)}\n`)
  } else {
    for (let index = 0; index < surface.length; index += 1) {
      await context.out.write(`${nodeText(surface[index]!, index)}\n`)
    }
  }
  await context.out.flush()
  if (read.tornTail !== null) {
    context.notice(
      'note',
      `the log ends with a torn tail (${read.tornTail.bytes} bytes at offset ${read.tornTail.offset ?? '?'}, never acknowledged): left out here, dropped by the next write open`,
    )
  }
  if (options.repaired) {
    if (repairedEvents > 0) {
      context.notice(
        'note',
        `applied ${repairedEvents} repair event(s) in memory (placeholders for ${pending} unanswered tool call(s) and the turn closer); nothing was written: the next write open appends them for real`,
      )
    }
  } else if (pending > 0) {
    context.notice(
      'note',
      `${pending} tool call(s) have no result yet: shown as the projection has them now; the next write open appends isError placeholders (TOOL_OUTCOME_UNKNOWN / TOOL_NOT_STARTED) before any request; run with --repaired to see them`,
    )
  }
  return ExitCode.OK
}

/** `agent-ledger messages`: the derived model-visible messages. */
export const messagesCommand: CommandSpec = {
  name: 'messages',
  summary: 'the model-visible messages, exactly as the next request would send them',
  help: HELP,
  options: {
    'no-pager': NO_PAGER_OPTION,

    json: JSON_OPTION,
    repaired: { type: 'boolean' },
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  pages: () => true,
  stdin: true,
  positionals: ['<session>'],
  async run(context, args) {
    const target = await resolveTarget(context, args)
    return runMessages(context, target, { json: flag(args, 'json'), repaired: flag(args, 'repaired') })
  },
}
