/**
 * W9, a huge tool output through the one store API (shared by `writer.test.ts`, 24 MB in the
 * gate, and `store-core.crash.test.ts`, 100 MB): one event far larger than a read chunk is
 * written, and read back byte-identical (sha256) in chunks.
 */
import { createHash } from 'node:crypto'
import { statSync } from 'node:fs'
import { join } from 'node:path'

import { expect } from 'vitest'

import { LOG_FILE_NAME } from '../../src/format.ts'
import { collect, coreTestStore, turnInputs } from './sessions.ts'

export async function roundTripHugeToolOutput(root: string, size: number): Promise<void> {
  const { store } = coreTestStore(root, {
    limits: { maxEventBytes: 128 * 1024 * 1024, maxLineLength: 128 * 1024 * 1024 },
    jsonl: { limits: { maxLineBytes: 128 * 1024 * 1024 } },
    redaction: null,
  })
  try {
    let block = ''
    for (let index = 0; block.length < 4096; index += 1) block += `line ${index} of a long tool output\n`
    const output = block.repeat(Math.ceil(size / block.length)).slice(0, size)
    const digest = createHash('sha256').update(output).digest('hex')
    const writer = await store.create({ id: 'huge' })
    const [start, user, assistant, call] = turnInputs(1)
    for (const input of [start!, user!, assistant!, call!]) writer.append(input)
    // A single event may exceed maxBufferedBytes only when the buffer is empty: flush first.
    await writer.flush()
    writer.append({
      type: 'tool/result',
      data: { message: { role: 'tool', tool_call_id: 'call_1', content: output } },
    })
    await writer.close()
    expect(statSync(join(root, 'huge', LOG_FILE_NAME)).size).toBeGreaterThan(size)
    const events = await collect(store.readEvents('huge', { fromSeq: 4 }))
    const content = (events[0]!.data as { message: { content: string } }).message.content
    expect(createHash('sha256').update(content).digest('hex')).toBe(digest)
  } finally {
    await store.close()
  }
}
