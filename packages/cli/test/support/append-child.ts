/**
 * A writer in another process for the live-follow browser test: opens session ARGV[3] in
 * the JSONL store ARGV[2] and, for each line read on stdin, appends one user message with
 * that line as its text, flushes it, and prints `appended <seq>`; closes at end of input.
 * Spawn with `node --conditions=@agent-ledger/source --import tsx test/support/append-child.ts ROOT ID`.
 */
import { createInterface } from 'node:readline'

import { createJsonlStore } from '@agent-ledger/session-store-jsonl'

const [root, id] = process.argv.slice(2)
const store = createJsonlStore({ root: root!, owner: 'serve-live-test-child' })
const writer = await store.openWriter(id!)
for await (const line of createInterface({ input: process.stdin })) {
  const event = writer.append({ type: 'user/message', data: { message: { role: 'user', content: line } } })
  await writer.flush()
  process.stdout.write(`appended ${event.seq}\n`)
}
await writer.close()
await store.close()
