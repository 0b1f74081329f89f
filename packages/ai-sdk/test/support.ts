import type { MockLanguageModelV3 } from 'ai/test'

type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

const usage = (input: number, output: number): LanguageModelV3GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
})

/** A model response that calls one tool. */
export function toolCallResponse(call: {
  id: string
  name: string
  input: unknown
}): LanguageModelV3GenerateResult {
  return {
    content: [
      { type: 'text', text: `Calling ${call.name}.` },
      { type: 'tool-call', toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.input) },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: usage(10, 5),
    warnings: [],
  }
}

/** A model response with text only. */
export function textResponse(text: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: usage(20, 3),
    warnings: [],
  }
}

type LanguageModelV3StreamResult = Awaited<ReturnType<MockLanguageModelV3['doStream']>>
type StreamPart = LanguageModelV3StreamResult['stream'] extends ReadableStream<infer TPart> ? TPart : never

/** A streamed model step: optional text, optional tool calls, then `finish`. */
export function streamedStep(step: {
  text?: string
  calls?: readonly { id: string; name: string; input: unknown }[]
}): StreamPart[] {
  const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }]
  if (step.text !== undefined) {
    parts.push(
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: step.text },
      { type: 'text-end', id: 't' },
    )
  }
  for (const call of step.calls ?? [])
    parts.push({
      type: 'tool-call',
      toolCallId: call.id,
      toolName: call.name,
      input: JSON.stringify(call.input),
    })
  const calls = (step.calls ?? []).length > 0
  parts.push({
    type: 'finish',
    finishReason: calls ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' },
    usage: usage(8, 4),
  })
  return parts
}
