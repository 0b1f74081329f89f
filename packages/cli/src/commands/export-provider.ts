import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'

import { noProviderExportLoss, planRepairFromState, toAnthropic } from '@agent-ledger/loop-repair'
import type { ProviderExportLoss } from '@agent-ledger/loop-repair'
import type { WireMessage } from '@agent-ledger/session-events'

import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { displayPath, ioError } from '../session-path.ts'
import type { SessionTarget } from '../open-store.ts'
import { readSessionView } from './messages.ts'

/**
 * The OpenAI chat shape: the projection as sent, `reasoning_content` dropped (OpenAI refuses
 * unknown fields on some models; DeepSeek wants it only on the current turn).
 */
function toOpenAi(messages: readonly WireMessage[]): {
  messages: WireMessage[]
  loss: ProviderExportLoss
} {
  const loss = noProviderExportLoss()
  const out = messages.map((message) => {
    if (message.role !== 'assistant' || message.reasoning_content === undefined) return message
    loss.reasoning += 1
    const { reasoning_content: _dropped, ...rest } = message
    return rest
  })
  return { messages: out, loss }
}

/**
 * `export --format openai|anthropic`: the repaired projection of a session (read-only: the
 * repair plan is applied in memory, as `messages --repaired` does) in a provider's shape.
 */
export async function runProviderExport(
  context: CommandContext,
  target: SessionTarget,
  options: { readonly format: 'openai' | 'anthropic'; readonly output: string | undefined },
): Promise<number> {
  const read = await readSessionView(context, target, null)
  const projection = read.projection
  const plan = planRepairFromState(projection.repairState, {
    nextSeq: projection.nextSeq,
    time: context.clock(),
  })
  for (const event of plan.events) projection.apply(event)
  const messages = projection.deriveMessages()
  const converted = options.format === 'openai' ? toOpenAi(messages) : toAnthropic(messages)
  const body =
    options.format === 'openai'
      ? (converted as ReturnType<typeof toOpenAi>).messages
      : (converted as ReturnType<typeof toAnthropic>).request
  const textOut = `${stringifyJson(body, 2)}\n`
  if (options.output === undefined) await context.out.write(textOut)
  else {
    const target = resolve(context.cwd, options.output)
    try {
      await writeFile(target, textOut, { mode: 0o600 })
    } catch (error) {
      throw ioError(error, { path: displayPath(target, context.cwd), doing: 'write' })
    }
  }
  const lost = Object.entries(converted.loss).filter(([, count]) => count > 0)
  if (lost.length > 0) {
    context.notice('note', `not carried over: ${lost.map(([key, count]) => `${key} ${count}`).join(', ')}`)
  }
  return ExitCode.OK
}
