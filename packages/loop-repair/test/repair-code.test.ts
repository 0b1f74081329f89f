import { describe, expect, it } from 'vitest'

import { isRepairCode, placeholderText, RepairCode } from '../src/index.ts'
import type { RepairCode as RepairCodeType } from '../src/index.ts'

const call = { callId: 'call_42', name: 'delete_branch' }

describe('placeholderText', () => {
  it('says a started call has an unknown outcome, may have had its side effect, and how to retry safely', () => {
    const text = placeholderText(RepairCode.TOOL_OUTCOME_UNKNOWN, call)

    expect(text).toMatch(/^Error: /)
    expect(text).toContain('interrupted after')
    expect(text).toContain('"call_42"')
    expect(text).toContain('"delete_branch"')
    expect(text).toContain('outcome is unknown')
    expect(text).toContain('may or may not have happened')
    expect(text).toContain('only if the tool is read-only or idempotent')
    expect(text).toContain('verify the current state first')
    expect(text).toMatch(/\[TOOL_OUTCOME_UNKNOWN\]$/)
  })

  it('says a call that never started had no effect and is safe to retry', () => {
    const text = placeholderText(RepairCode.TOOL_NOT_STARTED, call)

    expect(text).toMatch(/^Error: /)
    expect(text).toContain('interrupted before')
    expect(text).toContain('never ran')
    expect(text).toContain('safe to retry')
    expect(text).toMatch(/\[TOOL_NOT_STARTED\]$/)
  })

  it('never fabricates an outcome', () => {
    for (const code of Object.values(RepairCode)) {
      const text = placeholderText(code, call).toLowerCase()
      for (const claim of ['succeeded', 'success', 'completed', 'returned', 'output:'])
        expect(text).not.toContain(claim)
    }
  })

  it('is deterministic and quotes hostile ids and names as JSON strings', () => {
    const hostile = { callId: 'a"\nb', name: 'x] [TOOL_NOT_STARTED' }
    const text = placeholderText(RepairCode.TOOL_OUTCOME_UNKNOWN, hostile)
    expect(text).toBe(placeholderText(RepairCode.TOOL_OUTCOME_UNKNOWN, { ...hostile }))
    expect(text).toContain(JSON.stringify(hostile.callId))
    expect(text).not.toContain('\n')
  })

  it('falls back to the cautious wording for a code outside the table', () => {
    const text = placeholderText('SOMETHING_ELSE' as RepairCodeType, call)
    expect(text).toContain('outcome is unknown')
    expect(text).not.toContain('safe to retry')
  })
})

describe('RepairCode', () => {
  it('has string values equal to their names', () => {
    for (const [name, value] of Object.entries(RepairCode)) expect(value).toBe(name)
  })

  it('is recognised by isRepairCode, and nothing else is', () => {
    expect(isRepairCode('TOOL_OUTCOME_UNKNOWN')).toBe(true)
    expect(isRepairCode('TOOL_NOT_STARTED')).toBe(true)
    for (const other of ['CLOSE_TURN', 'tool_not_started', '', undefined, null, 1])
      expect(isRepairCode(other)).toBe(false)
  })
})
