import { RepairCode } from '@agent-ledger/loop-repair'
import type { AssistantMessage, ToolMessage, WireMessage, WireToolCall } from '@agent-ledger/session-events'

import { READ_ONLY_TOOLS } from '../tools.ts'
import type { ModelRequest, ModelResponse, Provider } from './provider.ts'

/** Suffix of the files the scripted model writes: `notes.md` is summarized into `notes.md.summary.md`. */
const SUMMARY_SUFFIX = '.summary.md'

/** Prompts starting with this run the rest of the prompt as one `run_command` call. */
const RUN_PREFIX = 'run:'

/**
 * What the scripted model answers a prompt it has no script for: what it can do offline,
 * and how to use a real model.
 */
export const OFFLINE_CAPABILITIES = [
  'I am the offline scripted model of mini-agent, so I only follow three scripts:',
  '- "Summarize notes.md": read a file and write notes.md.summary.md;',
  '- "Create hello.txt containing hello, then read it back.": write a file (and read it back);',
  '- "run: ls": run one command.',
  'For anything else, use a real model: set OPENAI_API_KEY and MODEL (and OPENAI_BASE_URL for any OpenAI-compatible server), then run the same prompt with --provider openai.',
].join('\n')

/** A request to create a file: `Create hello.txt containing hello, then read it back.` */
interface CreateRequest {
  readonly path: string
  readonly content: string
  readonly readBack: boolean
}

const CREATE_PATTERN =
  /^(?:please\s+)?(?:create|write|make)\s+(?:a\s+file\s+(?:named\s+|called\s+)?)?[`"']?([\w./-]+)[`"']?\s+(?:containing|with(?:\s+the\s+(?:text|content))?)\s+([\s\S]*?)(?:,?\s*(?:then|and)\s+read\s+it\s+back)?\s*\.?$/i

/**
 * Reads a create request out of a prompt.
 *
 * @param prompt - The user's prompt.
 * @returns The file, its content (quotes around it dropped, a final newline added) and whether to read it back; undefined for other prompts.
 */
function parseCreateRequest(prompt: string): CreateRequest | undefined {
  const match = CREATE_PATTERN.exec(prompt.trim())
  if (match === null) return undefined
  const raw = match[2]!.trim()
  const unquoted = /^(["'`])([\s\S]*)\1$/.exec(raw)?.[2] ?? raw
  return {
    path: match[1]!,
    content: `${unquoted}\n`,
    readBack: /(?:then|and)\s+read\s+it\s+back\s*\.?$/i.test(prompt.trim()),
  }
}

/** True for a prompt the summary script serves. */
function isSummaryRequest(prompt: string): boolean {
  return /\bsummar(?:y|ise|ize|ising|izing)\b/i.test(prompt)
}

function textOf(message: WireMessage): string {
  if (typeof message.content === 'string') return message.content
  if (message.content === null) return ''
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
}

/** FNV-1a over the conversation: a deterministic call id that changes whenever the conversation does. */
function conversationHash(messages: readonly WireMessage[]): string {
  let hash = 0x811c9dc5
  const text = JSON.stringify(messages)
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(16).padStart(8, '0')
}

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4)
}

interface Reply {
  readonly content: string
  readonly call?: { readonly name: string; readonly arguments: Record<string, unknown> }
}

function respond(messages: readonly WireMessage[], reply: Reply): ModelResponse {
  const toolCalls: WireToolCall[] =
    reply.call === undefined
      ? []
      : [
          {
            id: `call_${conversationHash(messages)}`,
            type: 'function',
            function: { name: reply.call.name, arguments: JSON.stringify(reply.call.arguments) },
          },
        ]
  const message: AssistantMessage =
    toolCalls.length === 0
      ? { role: 'assistant', content: reply.content }
      : { role: 'assistant', content: reply.content, tool_calls: toolCalls }
  const promptTokens = estimateTokens(JSON.stringify(messages))
  const completionTokens = estimateTokens(JSON.stringify(message))
  return {
    message,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
    finishReason: toolCalls.length === 0 ? 'stop' : 'tool_calls',
  }
}

function parseArguments(call: WireToolCall): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(call.function.arguments)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

function stringArgument(call: WireToolCall, key: string): string {
  const value = parseArguments(call)[key]
  return typeof value === 'string' ? value : ''
}

/** Finds the assistant tool call a tool message answers, searching backwards from `before`. */
function findCall(
  messages: readonly WireMessage[],
  callId: string,
  before: number,
): WireToolCall | undefined {
  for (let index = before - 1; index >= 0; index -= 1) {
    const message = messages[index]
    if (message?.role !== 'assistant') continue
    const call = message.tool_calls?.find((candidate) => candidate.id === callId)
    if (call !== undefined) return call
  }
  return undefined
}

/** The tool message answering `call` after index `from`, if any. */
function findResult(messages: readonly WireMessage[], callId: string, from: number): ToolMessage | undefined {
  for (let index = from + 1; index < messages.length; index += 1) {
    const message = messages[index]
    if (message?.role === 'tool' && message.tool_call_id === callId) return message
  }
  return undefined
}

function isErrorResult(result: ToolMessage): boolean {
  return result.content.startsWith('Error:') || /^exit code [1-9]/.test(result.content)
}

/**
 * The summary the scripted model writes for a file: deterministic, computed from the text.
 *
 * @param name - The workspace-relative file name.
 * @param text - The file's content as `read_file` returned it.
 * @returns Markdown text.
 */
export function summarize(name: string, text: string): string {
  const lines = text.split('\n').filter((line) => line.trim() !== '')
  const words = text.split(/\s+/).filter((word) => word !== '').length
  const first = lines[0]?.trim() ?? ''
  return `# Summary of ${name}\n\n- non-empty lines: ${lines.length}\n- words: ${words}\n- first line: ${JSON.stringify(first)}\n`
}

/** The last successful `read_file` of `target` anywhere in the conversation. */
function findLastRead(messages: readonly WireMessage[], target: string): string | undefined {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]
    if (message?.role !== 'tool' || isErrorResult(message)) continue
    const call = findCall(messages, message.tool_call_id, index)
    if (call?.function.name === 'read_file' && stringArgument(call, 'path') === target) return message.content
  }
  return undefined
}

/** A placeholder written by loop-repair, among the tool messages just before `index`. */
function findPlaceholderBefore(
  messages: readonly WireMessage[],
  index: number,
): { readonly result: ToolMessage; readonly code: RepairCode; readonly at: number } | undefined {
  for (let at = index - 1; at >= 0; at -= 1) {
    const message = messages[at]
    if (message?.role !== 'tool') return undefined
    if (message.content.includes(`[${RepairCode.TOOL_OUTCOME_UNKNOWN}]`)) {
      return { result: message, code: RepairCode.TOOL_OUTCOME_UNKNOWN, at }
    }
    if (message.content.includes(`[${RepairCode.TOOL_NOT_STARTED}]`)) {
      return { result: message, code: RepairCode.TOOL_NOT_STARTED, at }
    }
  }
  return undefined
}

function recover(
  messages: readonly WireMessage[],
  placeholder: NonNullable<ReturnType<typeof findPlaceholderBefore>>,
): Reply | undefined {
  const call = findCall(messages, placeholder.result.tool_call_id, placeholder.at)
  if (call === undefined) return undefined
  const name = call.function.name
  if (placeholder.code === RepairCode.TOOL_NOT_STARTED || READ_ONLY_TOOLS.has(name)) {
    return {
      content: `The previous run stopped before ${name} returned (${placeholder.code}); it is safe to run it again, so I am retrying it.`,
      call: { name, arguments: parseArguments(call) },
    }
  }
  if (name === 'write_file') {
    const target = stringArgument(call, 'path')
    return {
      content: `The previous run was interrupted during write_file to ${target} (${placeholder.code}): it may or may not have happened. I will read ${target} to check before doing anything else.`,
      call: { name: 'read_file', arguments: { path: target } },
    }
  }
  return {
    content: `The previous run was interrupted during ${name} (${placeholder.code}): it may or may not have run, and it is not safe to repeat blindly. Please check its effect; I will not run it again on my own.`,
  }
}

function nextAfterListing(prompt: string, listing: string): Reply {
  const files = listing
    .split('\n')
    .filter(
      (entry) =>
        entry !== '' &&
        !entry.endsWith('/') &&
        !entry.endsWith('@') &&
        !entry.startsWith('[') &&
        // list_dir's "(empty directory)" and "(N more ...)" lines are notes, not files.
        !entry.startsWith('('),
    )
    .filter((entry) => !entry.endsWith(SUMMARY_SUFFIX))
  const mentioned = files.find((file) => prompt.includes(file))
  const target = mentioned ?? files[0]
  if (target === undefined) {
    return {
      content:
        'The workspace has no file I could summarize (it is empty, or holds only summaries and directories). Add a file, or ask me to create one: "Create hello.txt containing hello, then read it back."',
    }
  }
  return { content: `I will read ${target}.`, call: { name: 'read_file', arguments: { path: target } } }
}

function nextAfterRead(messages: readonly WireMessage[], target: string, result: ToolMessage): Reply {
  if (target.endsWith(SUMMARY_SUFFIX)) {
    if (!isErrorResult(result)) {
      return {
        content: `I checked: ${target} exists, so the interrupted write had happened. Nothing else to do.`,
      }
    }
    const source = target.slice(0, -SUMMARY_SUFFIX.length)
    const text = findLastRead(messages, source)
    if (text === undefined) {
      return {
        content: `${target} is missing and I no longer have ${source} in view; reading it again.`,
        call: { name: 'read_file', arguments: { path: source } },
      }
    }
    return {
      content: `${target} is missing, so the interrupted write had not happened. Writing it now.`,
      call: { name: 'write_file', arguments: { path: target, content: summarize(source, text) } },
    }
  }
  if (isErrorResult(result)) return { content: `I could not read ${target}: ${result.content}` }
  return {
    content: `Writing a summary of ${target}.`,
    call: {
      name: 'write_file',
      arguments: { path: target + SUMMARY_SUFFIX, content: summarize(target, result.content) },
    },
  }
}

function decide(messages: readonly WireMessage[]): Reply {
  const lastUser = messages.findLastIndex((message) => message.role === 'user')
  const userMessage = messages[lastUser]
  if (userMessage === undefined) return { content: 'There is no request to work on.' }
  const prompt = textOf(userMessage).trim()
  const after = messages.slice(lastUser + 1)
  const lastAssistantIndex = messages.findLastIndex(
    (message, index) => index > lastUser && message.role === 'assistant',
  )
  const lastAssistant = messages[lastAssistantIndex]
  const lastCall = lastAssistant?.role === 'assistant' ? lastAssistant.tool_calls?.[0] : undefined
  const lastResult =
    lastCall === undefined ? undefined : findResult(messages, lastCall.id, lastAssistantIndex)

  if (prompt.startsWith(RUN_PREFIX)) {
    const command = prompt.slice(RUN_PREFIX.length).trim()
    if (lastResult === undefined) {
      return {
        content: `Running ${JSON.stringify(command)}.`,
        call: { name: 'run_command', arguments: { command } },
      }
    }
    return { content: `The command finished:\n${lastResult.content}` }
  }

  const create = parseCreateRequest(prompt)
  if (after.length === 0 || lastCall === undefined || lastResult === undefined) {
    const placeholder = findPlaceholderBefore(messages, lastUser)
    const recovery = placeholder === undefined ? undefined : recover(messages, placeholder)
    if (recovery !== undefined) return recovery
    if (create !== undefined) {
      return {
        content: `I will create ${create.path}.`,
        call: { name: 'write_file', arguments: { path: create.path, content: create.content } },
      }
    }
    if (!isSummaryRequest(prompt)) return { content: OFFLINE_CAPABILITIES }
    return {
      content: 'I will look at the workspace first.',
      call: { name: 'list_dir', arguments: { path: '.' } },
    }
  }

  if (create !== undefined && stringArgument(lastCall, 'path') === create.path) {
    const createdTarget = create.path
    if (lastCall.function.name === 'write_file') {
      if (isErrorResult(lastResult))
        return { content: `I could not create ${createdTarget}: ${lastResult.content}` }
      if (!create.readBack) return { content: `Done: created ${createdTarget}.` }
      return {
        content: `Created ${createdTarget}; reading it back.`,
        call: { name: 'read_file', arguments: { path: createdTarget } },
      }
    }
    if (lastCall.function.name === 'read_file') {
      if (isErrorResult(lastResult))
        return { content: `I could not read ${createdTarget} back: ${lastResult.content}` }
      const same = lastResult.content === create.content
      return {
        content: `${createdTarget} contains:\n${lastResult.content}${same ? '\nThat is what I wrote.' : '\nThat is NOT what I wrote.'}`,
      }
    }
  }

  const target = stringArgument(lastCall, 'path')
  switch (lastCall.function.name) {
    case 'list_dir':
      if (isErrorResult(lastResult))
        return { content: `I could not list the workspace: ${lastResult.content}` }
      return nextAfterListing(prompt, lastResult.content)
    case 'read_file':
      return nextAfterRead(messages, target, lastResult)
    case 'write_file':
      if (isErrorResult(lastResult)) return { content: `I could not write ${target}: ${lastResult.content}` }
      return { content: `Done: the summary is in ${target}.` }
    default:
      return { content: `The last tool answered:\n${lastResult.content}` }
  }
}

/**
 * The scripted model's answer to a conversation: a pure function of the messages.
 *
 * The scripts: a prompt asking for a summary lists the workspace, reads the file the prompt
 * names (else the first file), writes `<file>.summary.md` and answers; "Create F containing
 * T[, then read it back]" writes F (and reads it back); a prompt starting with `run:` runs the
 * rest as one command. Any other prompt gets {@link OFFLINE_CAPABILITIES}: what it can do
 * offline and how to use `--provider openai`.
 * After a resume it reads the loop-repair placeholder honestly: a call that never started
 * (`TOOL_NOT_STARTED`) or a read-only one is retried; an interrupted `write_file`
 * (`TOOL_OUTCOME_UNKNOWN`) is checked by reading the file before anything is rewritten; an
 * interrupted command is not repeated.
 *
 * @param messages - The derived messages, exactly as the agent would send them.
 * @returns The assistant message (one tool call at most), usage estimated from the text, and the finish reason.
 */
export function scriptedReply(messages: readonly WireMessage[]): ModelResponse {
  return respond(messages, decide(messages))
}

/**
 * Creates the built-in deterministic provider: offline, no keys, same conversation, same answer.
 *
 * @returns A provider named `scripted` whose `complete` calls {@link scriptedReply}.
 */
export function createScriptedProvider(): Provider {
  return {
    name: 'scripted',
    model: 'mini-agent-script-v1',
    complete(request: ModelRequest): Promise<ModelResponse> {
      if (request.signal?.aborted === true) {
        return Promise.reject(new DOMException('The model request was aborted.', 'AbortError'))
      }
      return Promise.resolve(scriptedReply(request.messages))
    },
  }
}
