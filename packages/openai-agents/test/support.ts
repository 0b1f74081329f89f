import { Usage } from '@openai/agents-core'
import type { AgentOutputItem, Model, ModelRequest, ModelResponse, StreamEvent } from '@openai/agents-core'

/** A scripted `Model`: answers each request with the next response and records every request. */
export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = []
  readonly #responses: AgentOutputItem[][]

  constructor(responses: AgentOutputItem[][]) {
    this.#responses = [...responses]
  }

  getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(structuredClone(request))
    const output = this.#responses.shift()
    if (output === undefined)
      throw new Error(`ScriptedModel: no response left for request ${this.requests.length}`)
    return Promise.resolve({
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 4, totalTokens: 14 }),
      output,
    })
  }

  /** Streams the next response: `response_started`, a text delta per output text, `response_done`. */
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const response = await this.getResponse(request)
    yield { type: 'response_started' }
    for (const item of response.output) {
      if (item.type === 'message' && item.role === 'assistant') {
        for (const part of item.content)
          if (part.type === 'output_text') yield { type: 'output_text_delta', delta: part.text }
      }
    }
    yield {
      type: 'response_done',
      response: {
        id: `response-${this.requests.length}`,
        usage: { requests: 1, inputTokens: 10, outputTokens: 4, totalTokens: 14 },
        // The stream event's output type is narrower than AgentOutputItem; the scripted items fit it.
        output: response.output as Extract<StreamEvent, { type: 'response_done' }>['response']['output'],
      },
    }
  }
}

/** An assistant text message item. */
export function say(text: string): AgentOutputItem {
  return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }
}

/** A function call item. */
export function call(callId: string, name: string, input: unknown): AgentOutputItem {
  return { type: 'function_call', callId, name, arguments: JSON.stringify(input), status: 'completed' }
}
