import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

import type { WireMessage } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { MiniAgentError } from '../src/mini-agent-error.ts'
import {
  buildChatRequest,
  createOpenAiProvider,
  DEFAULT_OPENAI_BASE_URL,
  openAiConfigFromEnv,
  parseChatResponse,
} from '../src/providers/openai.ts'
import { TOOL_DEFINITIONS } from '../src/tools.ts'
import type { ToolDefinition } from '../src/tools.ts'

interface Exchange {
  request: {
    method: string
    url: string
    headers: Record<string, string>
    body: { model: string; messages: WireMessage[]; tools?: { function: ToolDefinition }[] }
  }
  response: { status: number; body: unknown }
  expected:
    | { message: unknown; usage?: unknown; finishReason: string }
    | { error: { code: string; status: number; messageContains: string } }
}

const fixtureDirectory = path.join(import.meta.dirname, 'fixtures', 'providers')
const exchanges = readdirSync(fixtureDirectory)
  .filter((name) => name.endsWith('.exchange.json'))
  .sort()
  .map((name) => ({
    name,
    exchange: JSON.parse(readFileSync(path.join(fixtureDirectory, name), 'utf8')) as Exchange,
  }))

function configOf(exchange: Exchange) {
  return {
    baseUrl: exchange.request.url.replace(/\/chat\/completions$/, ''),
    apiKey: exchange.request.headers.authorization!.replace(/^Bearer /, ''),
    model: exchange.request.body.model,
  }
}

function fakeFetch(exchange: Exchange, seen: { url?: string; init?: RequestInit }[]): typeof fetch {
  return (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    seen.push({ url, ...(init === undefined ? {} : { init }) })
    return Promise.resolve(
      new Response(JSON.stringify(exchange.response.body), {
        status: exchange.response.status,
        headers: { 'content-type': 'application/json' },
      }),
    )
  }
}

describe('openai provider against recorded exchanges', () => {
  it('has the recorded exchanges (OpenAI and DeepSeek, tool call, final answer, errors)', () => {
    expect(exchanges.map((entry) => entry.name)).toEqual([
      'deepseek-error-402.exchange.json',
      'deepseek-reasoning-passback.exchange.json',
      'deepseek-tool-call.exchange.json',
      'openai-error-401.exchange.json',
      'openai-final-answer.exchange.json',
      'openai-tool-call.exchange.json',
    ])
  })

  for (const { name, exchange } of exchanges) {
    it(`${name}: builds exactly the recorded request and reads the recorded response`, async () => {
      const tools = (exchange.request.body.tools ?? []).map((tool) => tool.function)
      const seen: { url?: string; init?: RequestInit }[] = []
      const provider = createOpenAiProvider({ ...configOf(exchange), fetch: fakeFetch(exchange, seen) })
      const completion = provider.complete({ messages: exchange.request.body.messages, tools })
      if ('error' in exchange.expected) {
        const expectedError = exchange.expected.error
        await expect(completion).rejects.toSatisfy(
          (error: unknown) =>
            MiniAgentError.is(error) &&
            error.code === expectedError.code &&
            error.status === expectedError.status &&
            error.message.includes(expectedError.messageContains) &&
            !error.message.includes(configOf(exchange).apiKey),
        )
      } else {
        const result = await completion
        expect(result).toEqual(exchange.expected)
      }
      expect(seen).toHaveLength(1)
      const sent = seen[0]!
      expect(sent.url).toBe(exchange.request.url)
      expect(sent.init?.method).toBe(exchange.request.method)
      const headers = sent.init?.headers as Record<string, string>
      expect(headers.authorization).toBe(exchange.request.headers.authorization)
      expect(headers['content-type']).toBe('application/json')
      expect(JSON.parse(sent.init?.body as string)).toEqual(exchange.request.body)
    })
  }
})

describe('buildChatRequest', () => {
  it('wraps every tool as an OpenAI function and sends the derived messages unchanged', () => {
    const messages: WireMessage[] = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: '',
        reasoning_content: 'think',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'list_dir', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
    ]
    const request = buildChatRequest(
      { baseUrl: 'https://api.deepseek.com/', apiKey: 'k', model: 'deepseek-chat', maxTokens: 512 },
      { messages, tools: TOOL_DEFINITIONS },
    )
    expect(request.url).toBe('https://api.deepseek.com/chat/completions')
    const body = JSON.parse(request.init.body)
    expect(body.messages).toEqual(messages)
    expect(body.max_tokens).toBe(512)
    expect(
      body.tools.map((tool: { type: string; function: { name: string } }) => tool.function.name),
    ).toEqual(['list_dir', 'read_file', 'write_file', 'run_command'])
    for (const tool of body.tools) {
      expect(tool.type).toBe('function')
      expect(tool.function.parameters.type).toBe('object')
    }
  })

  it('omits tools when there are none', () => {
    const request = buildChatRequest(
      { baseUrl: DEFAULT_OPENAI_BASE_URL, apiKey: 'k', model: 'm' },
      { messages: [], tools: [] },
    )
    expect(JSON.parse(request.init.body)).toEqual({ model: 'm', messages: [], stream: false })
  })
})

describe('parseChatResponse', () => {
  const context = { url: 'https://example.test/v1/chat/completions', apiKey: 'sk-secret-123' }

  it('reports a non-JSON error page (a proxy 502) with its status', () => {
    expect(() => parseChatResponse(502, '<html>Bad gateway</html>', context)).toThrow(
      expect.objectContaining({ code: 'PROVIDER_HTTP_ERROR', status: 502 }),
    )
  })

  it('never repeats the API key in an error message', () => {
    const body = JSON.stringify({ error: { message: 'key sk-secret-123 is revoked' } })
    try {
      parseChatResponse(403, body, context)
      expect.unreachable()
    } catch (error) {
      expect(MiniAgentError.is(error) && error.message).toContain('key *** is revoked')
    }
  })

  it('refuses a 2xx body that is not a chat completion', () => {
    expect(() => parseChatResponse(200, '{"choices":[]}', context)).toThrow(
      expect.objectContaining({ code: 'PROVIDER_BAD_RESPONSE' }),
    )
    expect(() => parseChatResponse(200, 'not json', context)).toThrow(
      expect.objectContaining({ code: 'PROVIDER_BAD_RESPONSE' }),
    )
  })

  it('maps finish_reason length and unknown reasons', () => {
    const body = (reason: string) =>
      JSON.stringify({ choices: [{ message: { content: 'cut' }, finish_reason: reason }] })
    expect(parseChatResponse(200, body('length'), context).finishReason).toBe('length')
    expect(parseChatResponse(200, body('insufficient_system_resource'), context).finishReason).toBe('other')
  })
})

describe('createOpenAiProvider: transport failures', () => {
  it('turns a fetch rejection into PROVIDER_NETWORK_ERROR and lets an abort through', async () => {
    const failing = createOpenAiProvider({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      model: 'm',
      fetch: () => Promise.reject(new TypeError('fetch failed')),
    })
    await expect(failing.complete({ messages: [], tools: [] })).rejects.toMatchObject({
      code: 'PROVIDER_NETWORK_ERROR',
    })
    const aborting = createOpenAiProvider({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      model: 'm',
      fetch: () => Promise.reject(new DOMException('aborted', 'AbortError')),
    })
    await expect(aborting.complete({ messages: [], tools: [] })).rejects.toMatchObject({ name: 'AbortError' })
  })
})

describe('openAiConfigFromEnv', () => {
  it('reads OPENAI_BASE_URL, OPENAI_API_KEY and MODEL, defaulting the base URL', () => {
    expect(openAiConfigFromEnv({ OPENAI_API_KEY: 'k', MODEL: 'm' })).toEqual({
      baseUrl: DEFAULT_OPENAI_BASE_URL,
      apiKey: 'k',
      model: 'm',
    })
    expect(
      openAiConfigFromEnv({
        OPENAI_BASE_URL: 'https://api.deepseek.com',
        OPENAI_API_KEY: 'k',
        MODEL: 'deepseek-chat',
      }).baseUrl,
    ).toBe('https://api.deepseek.com')
  })

  it('names the missing or malformed variable', () => {
    expect(() => openAiConfigFromEnv({ MODEL: 'm' })).toThrow(/OPENAI_API_KEY/)
    expect(() => openAiConfigFromEnv({ OPENAI_API_KEY: 'k' })).toThrow(/MODEL/)
    expect(() =>
      openAiConfigFromEnv({ OPENAI_BASE_URL: 'ftp://x', OPENAI_API_KEY: 'k', MODEL: 'm' }),
    ).toThrow(/OPENAI_BASE_URL/)
  })
})
