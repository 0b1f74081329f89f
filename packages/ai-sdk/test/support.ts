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
