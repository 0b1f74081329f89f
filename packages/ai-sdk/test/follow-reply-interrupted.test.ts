/**
 * `followReply` when the server dies with a turn open (a real SIGKILL of a child inside a
 * tool) and nothing reopens the session: while the child lives the follow waits (it checks the
 * lease and goes on), once no writer holds a live lease it ends with the logged reply and an
 * `error` chunk (`REPLY_INTERRUPTED`), never hanging on a `turn/end` that cannot come.
 */
import type { SessionStore } from '@agent-ledger/session-store'
import { readUIMessageStream } from 'ai'
import type { UIMessageChunk } from 'ai'
import { describe, expect, it, onTestFinished } from 'vitest'

import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { followReply } from '../src/index.ts'
import { crossProcessStoreKinds } from './stores.ts'

/** The store, its backend's `head` calls counted (each is one lease check of the follow). */
function counted(store: SessionStore): { store: SessionStore; checks: () => number } {
  let checks = 0
  const backend = new Proxy(store.backend, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      if (property !== 'head') return (value as (...args: unknown[]) => unknown).bind(target)
      return (...args: unknown[]) => {
        checks += 1
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  const watched = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'backend') return backend
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  return { store: watched, checks: () => checks }
}

describe.each(crossProcessStoreKinds)('followReply over the %s store', (_name, kind) => {
  it(
    'a turn whose server was SIGKILLed mid-tool ends with the logged reply and a REPLY_INTERRUPTED error chunk',
    async () => {
      const opened = await kind.open()
      onTestFinished(async () => {
        await opened.store.close()
        await opened.close()
      })
      const id = opened.id('killed-follow')
      // A dead writer's lease lives until it expires: the child's is short, and it renews it
      // while alive (in the tool), as a live server would.
      const child = spawnTsChild(new URL('./fixtures/crash-mid-tool.ts', import.meta.url), [
        opened.target!,
        id,
        '5000',
      ])
      onTestFinished(() => {
        child.child.kill('SIGKILL')
      })
      await child.waitFor('IN_TOOL')
      const { store, checks } = counted(opened.store)
      const reply = await followReply(store, id, { leaseCheckMs: 100 })
      expect(reply.status).toBe(200)
      const chunks: UIMessageChunk[] = []
      const reader = reply
        .body!.pipeThrough(new TextDecoderStream())
        .pipeThrough(
          new TransformStream<string, UIMessageChunk>({
            transform(text, controller) {
              for (const line of text.split('\n')) {
                if (line.startsWith('data: ') && line !== 'data: [DONE]')
                  controller.enqueue(JSON.parse(line.slice(6)) as UIMessageChunk)
              }
            },
          }),
        )
        .getReader()
      let ended = false
      const drained = (async () => {
        for (;;) {
          const next = await reader.read()
          if (next.done) break
          chunks.push(next.value)
        }
        ended = true
      })()
      // While the child lives (the JSONL lock, the PostgreSQL lease) the follow checks and waits.
      await waitUntil('the logged tool call', () =>
        chunks.some((chunk) => chunk.type === 'tool-input-available'),
      )
      const before = checks()
      await waitUntil('two lease checks with the child alive', () => checks() >= before + 2)
      expect(ended).toBe(false)
      expect(chunks.some((chunk) => chunk.type === 'error')).toBe(false)

      child.child.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')
      await drained
      const error = chunks.at(-1) as Extract<UIMessageChunk, { type: 'error' }>
      expect(error.type).toBe('error')
      expect(error.errorText).toContain(JSON.stringify(id))
      expect(error.errorText).toContain('no writer holding a live lease')
      // What was logged came first: the deploy call, as the SDK's client reads it.
      expect(chunks.filter((chunk) => chunk.type === 'tool-input-available')).toMatchObject([
        { toolCallId: 'call-deploy', toolName: 'deploy', input: { service: 'web' } },
      ])
      const parts: string[] = []
      for await (const message of readUIMessageStream({
        stream: new ReadableStream({
          start(controller) {
            for (const chunk of chunks) if (chunk.type !== 'error') controller.enqueue(chunk)
            controller.close()
          },
        }),
      }))
        parts.splice(0, parts.length, ...message.parts.map((part) => part.type))
      expect(parts).toContain('tool-deploy')
    },
    testTime(120_000),
  )
})
