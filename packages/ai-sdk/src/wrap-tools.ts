import type { SessionWriter } from '@agent-ledger/session-store'
import type { ToolExecutionOptions, ToolSet } from 'ai'

import { fromModelMessages } from './convert.ts'

/** Options of {@link wrapTools}. */
export interface WrapToolsOptions {
  /** Called with the seq of every `tool/result` the wrapper logs with `isError: true`. */
  readonly onErrorResult?: (seq: number) => void
  /**
   * Called (and awaited) when a tool's `needsApproval` says a call needs approval, before the
   * SDK asks for it: the session logs the request there.
   */
  readonly onApprovalRequest?: (call: { readonly callId: string; readonly name: string }) => Promise<void>
}

type NeedsApproval = (input: unknown, options: { toolCallId: string }) => boolean | PromiseLike<boolean>

/** The tool's `needsApproval`, reporting each call that needs approval to `onApprovalRequest`. */
function approvalOf(
  tool: ToolSet[string],
  name: string,
  options: WrapToolsOptions,
): { needsApproval?: NeedsApproval } {
  const needs = tool.needsApproval as boolean | NeedsApproval | undefined
  if (needs === undefined || needs === false || options.onApprovalRequest === undefined) return {}
  const report = options.onApprovalRequest
  return {
    needsApproval: async (input, execution) => {
      const needed = needs === true ? true : await needs(input, execution)
      if (needed) await report({ callId: execution.toolCallId, name })
      return needed
    },
  }
}

/** The surface's result for `callId` (a repair placeholder that a late real result replaces), if any. */
function answeredAt(writer: SessionWriter, callId: string): number | undefined {
  const surface = writer.projection.surface()
  for (let index = surface.length - 1; index >= 0; index -= 1) {
    const node = surface[index]!
    if (node.message.role === 'tool' && node.message.tool_call_id === callId) return node.seq
  }
  return undefined
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value
}

/** True when the surface already holds an assistant message that requested `callId`. */
function hasAssistantCall(writer: SessionWriter, callId: string): boolean {
  const surface = writer.projection.surface()
  for (let index = surface.length - 1; index >= 0; index -= 1) {
    const message = surface[index]!.message
    if (message.role === 'assistant' && message.tool_calls?.some((call) => call.id === callId)) return true
    if (message.role === 'user') return false
  }
  return false
}

class ToolLogger {
  readonly #writer: SessionWriter
  readonly #options: WrapToolsOptions

  constructor(writer: SessionWriter, options: WrapToolsOptions) {
    this.#writer = writer
    this.#options = options
  }

  /** Logs the start of a call and makes it durable; returns the `tool/call` seq. */
  async start(call: {
    readonly callId: string
    readonly name: string
    readonly input: unknown
  }): Promise<number> {
    const argumentsText = typeof call.input === 'string' ? call.input : JSON.stringify(call.input ?? {})
    if (!hasAssistantCall(this.#writer, call.callId)) {
      // Without the recorder's model wrapper the assistant message is not logged yet; log the call
      // alone so that repair can answer it (the step's text, if any, is recorded after it).
      this.#writer.append({
        type: 'assistant/message',
        data: {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: call.callId, type: 'function', function: { name: call.name, arguments: argumentsText } },
            ],
          },
        },
      })
    }
    const logged = this.#writer.append({
      type: 'tool/call',
      data: { callId: call.callId, name: call.name, arguments: argumentsText },
    })
    await this.#writer.flush()
    return logged.seq
  }

  async finish(
    call: { readonly callId: string; readonly callSeq: number },
    outcome: { readonly content: string; readonly isError: boolean },
  ): Promise<void> {
    // A call run after a restart (an approval answered later) already has a repair placeholder:
    // the real result replaces it on the surface; the placeholder stays in the log.
    const placeholder = answeredAt(this.#writer, call.callId)
    const logged = this.#writer.append({
      type: 'tool/result',
      data: {
        message: { role: 'tool', tool_call_id: call.callId, content: outcome.content },
        ...(outcome.isError ? { isError: true } : {}),
      },
      ...(placeholder === undefined
        ? { sourceEventSeqs: [call.callSeq] }
        : {
            surfaceOp: { op: 'replace', startSeq: placeholder, endSeq: placeholder },
            sourceEventSeqs: [placeholder, call.callSeq].sort((a, b) => a - b),
          }),
    })
    if (outcome.isError) this.#options.onErrorResult?.(logged.seq)
    await this.#writer.flush()
  }
}

async function modelText(
  tool: ToolSet[string],
  call: { toolCallId: string; input: unknown; output: unknown },
): Promise<{ content: string; isError: boolean }> {
  if (tool.toModelOutput !== undefined) {
    const output = await tool.toModelOutput(call)
    const [entry] = fromModelMessages(
      [
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: call.toolCallId, toolName: 'tool', output }],
        },
      ],
      { unsupported: 'placeholder' },
    )
    return { content: entry?.message.content as string, isError: entry?.isError === true }
  }
  if (typeof call.output === 'string') return { content: call.output, isError: false }
  return { content: JSON.stringify(call.output ?? null), isError: false }
}

/**
 * Wraps every tool's `execute` so that the call is logged and **durable before the tool
 * runs**, and its result (or error) is logged after: `tool/call` + flush, then the tool, then
 * `tool/result` (citing the `tool/call` seq) + flush. A crash while the tool runs therefore
 * resumes with a `TOOL_OUTCOME_UNKNOWN` placeholder for that call, never with silence.
 *
 * **Details**: when the surface has no assistant message requesting the call (the model was
 * not wrapped with the session's recorder), a one-call assistant message is logged first so
 * repair can answer the call. A thrown error is logged as an `isError` result with the error's
 * message, then re-thrown for the SDK to report. A streaming tool (an async generator `execute`)
 * is logged once, with its last value; an async iterable returned by a plain function is
 * drained and its last value returned. Tools without `execute` (client-side
 * tools) are returned unchanged.
 *
 * @param tools - The AI SDK tool set.
 * @param writer - The open session.
 * @param options - `onErrorResult` observes logged error results.
 * @returns A tool set of the same type whose `execute` functions log.
 */
export function wrapTools<TTools extends ToolSet>(
  tools: TTools,
  writer: SessionWriter,
  options: WrapToolsOptions = {},
): TTools {
  const logger = new ToolLogger(writer, options)
  const wrapped: Record<string, ToolSet[string]> = {}
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute
    if (execute === undefined) {
      wrapped[name] = tool
      continue
    }
    const call = execute as (input: unknown, options: ToolExecutionOptions) => unknown
    if (Object.prototype.toString.call(execute) === '[object AsyncGeneratorFunction]') {
      // A streaming tool: the SDK needs the iterable itself, so the logging happens inside it.
      wrapped[name] = {
        ...tool,
        ...approvalOf(tool, name, options),
        execute: async function* (input: unknown, execution: ToolExecutionOptions): AsyncGenerator<unknown> {
          const callId = execution.toolCallId
          const callSeq = await logger.start({ callId, name, input })
          let last: unknown
          try {
            for await (const value of call(input, execution) as AsyncIterable<unknown>) {
              last = value
              yield value
            }
          } catch (error) {
            await logger.finish({ callId, callSeq }, { content: errorText(error), isError: true })
            throw error
          }
          await logger.finish(
            { callId, callSeq },
            await modelText(tool, { toolCallId: callId, input, output: last }),
          )
        },
      }
      continue
    }
    const run = async (input: unknown, execution: ToolExecutionOptions): Promise<unknown> => {
      const callId = execution.toolCallId
      const callSeq = await logger.start({ callId, name, input })
      let output: unknown
      try {
        output = await call(input, execution)
        if (isAsyncIterable(output)) {
          // An iterable from a plain function: drained here, its last value is the result.
          let last: unknown
          for await (const value of output) last = value
          output = last
        }
      } catch (error) {
        await logger.finish({ callId, callSeq }, { content: errorText(error), isError: true })
        throw error
      }
      await logger.finish({ callId, callSeq }, await modelText(tool, { toolCallId: callId, input, output }))
      return output
    }
    wrapped[name] = { ...tool, ...approvalOf(tool, name, options), execute: run }
  }
  return wrapped as TTools
}
