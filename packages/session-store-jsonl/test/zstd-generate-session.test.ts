import { parseEvent, sessionHeaderSchema } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { generateSessionEvents, generateSessionLines } from '../bench/generate-session.ts'

describe('generateSessionLines (zstd benchmark corpus)', () => {
  it('is deterministic in its seed and stops at a turn boundary past the target size', () => {
    const first = [...generateSessionLines({ seed: 3, targetBytes: 400_000 })]
    expect([...generateSessionLines({ seed: 3, targetBytes: 400_000 })]).toEqual(first)
    expect([...generateSessionLines({ seed: 4, targetBytes: 400_000 })]).not.toEqual(first)
    const bytes = first.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)
    expect(bytes).toBeGreaterThanOrEqual(400_000)
    expect(JSON.parse(first.at(-1)!)).toMatchObject({ type: 'turn/end' })
  })

  it('writes a valid header and events that parseEvent accepts, seq dense from 0, with tool results from bytes to hundreds of KB', () => {
    const lines = [...generateSessionLines({ seed: 5, targetBytes: 2_000_000 })]
    expect(sessionHeaderSchema.safeParse(JSON.parse(lines[0]!)).success).toBe(true)
    const sizes: number[] = []
    lines.slice(1).forEach((line, index) => {
      const event = parseEvent(JSON.parse(line))
      expect(event.seq).toBe(index)
      if (event.type === 'tool/result') sizes.push(Buffer.byteLength(line))
    })
    expect(Math.min(...sizes)).toBeLessThan(400)
    expect(Math.max(...sizes)).toBeGreaterThan(100_000)
    expect(lines.slice(1).map((line) => JSON.stringify(JSON.parse(line)))).toEqual(
      [...generateSessionEvents({ seed: 5, targetBytes: 2_000_000 })].map((event) => JSON.stringify(event)),
    )
  })
})
