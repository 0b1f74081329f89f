/**
 * A scripted Anthropic Messages API on loopback for the real SDK's CLI
 * (`ANTHROPIC_BASE_URL`): every `POST /v1/messages` answers one text reply, streamed as
 * server-sent events when the request asks for a stream; the request bodies are kept.
 */
import { createServer } from 'node:http'
import type { Server } from 'node:http'

/** The server, its base URL, the bodies of the message requests it answered, and how to stop it. */
export interface ScriptedApi {
  readonly url: string
  readonly requests: string[]
  readonly close: () => Promise<void>
}

/** The message of a reply, before its content (streamed after it, or filled in). */
function replyMessage(): Record<string, unknown> {
  return {
    id: 'msg_scripted',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 1 },
  }
}

/** Starts the server on 127.0.0.1 (a free port); every message request is answered `text`. */
export async function startScriptedApi(text: string): Promise<ScriptedApi> {
  const requests: string[] = []
  const server: Server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => {
      body += chunk
    })
    request.on('end', () => {
      const url = request.url ?? ''
      if (request.method !== 'POST' || !url.startsWith('/v1/messages')) {
        response.writeHead(404, { 'content-type': 'application/json' })
        response.end('{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}')
        return
      }
      if (url.includes('count_tokens')) {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end('{"input_tokens":5}')
        return
      }
      requests.push(body)
      const message = replyMessage()
      if (!body.includes('"stream":true')) {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(
          JSON.stringify({ ...message, content: [{ type: 'text', text }], stop_reason: 'end_turn' }),
        )
        return
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      const send = (event: string, data: unknown): void => {
        response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
      }
      send('message_start', { type: 'message_start', message })
      send('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      })
      send('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text },
      })
      send('content_block_stop', { type: 'content_block_stop', index: 0 })
      send('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 3 },
      })
      send('message_stop', { type: 'message_stop' })
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
