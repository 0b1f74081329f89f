import type { LoggedEvent } from '@agent-ledger/session-events'
import { describe, expect, it } from 'vitest'

import { PageSizer } from '../src/transcript/budget.ts'
import { editDiff } from '../src/transcript/edits.ts'

const call = (_name: string, args: unknown): string =>
  typeof args === 'string' ? args : JSON.stringify(args)

describe('file edits as diffs', () => {
  it('an Edit is a line diff of old_string against new_string, unchanged runs elided beyond three lines', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'old', 'i'].join('\n')
    const after = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'new', 'i'].join('\n')
    expect(
      editDiff('Edit', call('Edit', { file_path: '/p/x.ts', old_string: before, new_string: after })),
    ).toEqual([
      { kind: 'file', text: 'Edit /p/x.ts' },
      { kind: 'hunk', text: '… 5 unchanged line(s)' },
      { kind: 'ctx', text: 'f' },
      { kind: 'ctx', text: 'g' },
      { kind: 'ctx', text: 'h' },
      { kind: 'del', text: 'old' },
      { kind: 'add', text: 'new' },
      { kind: 'ctx', text: 'i' },
    ])
  })

  it('a MultiEdit numbers its edits; a Write adds every line; replace_all is said', () => {
    const multi = editDiff(
      'MultiEdit',
      call('MultiEdit', {
        file_path: 'x',
        edits: [
          { old_string: 'a', new_string: 'b' },
          { old_string: 'c', new_string: 'd', replace_all: true },
        ],
      }),
    )
    expect(multi).toEqual([
      { kind: 'file', text: 'MultiEdit x' },
      { kind: 'hunk', text: 'edit 1 of 2' },
      { kind: 'del', text: 'a' },
      { kind: 'add', text: 'b' },
      { kind: 'hunk', text: 'edit 2 of 2 (every occurrence)' },
      { kind: 'del', text: 'c' },
      { kind: 'add', text: 'd' },
    ])
    expect(editDiff('Write', call('Write', { file_path: 'y', content: 'one\ntwo\n' }))).toEqual([
      { kind: 'file', text: 'Write y' },
      { kind: 'add', text: 'one' },
      { kind: 'add', text: 'two' },
    ])
  })

  it('apply_patch as a raw custom tool input, as {input}, and as a shell command gives the same lines', () => {
    const patch =
      '*** Begin Patch\n*** Add File: n.txt\n+hi\n*** Update File: m.rs\n@@ fn x\n-a\n+b\n c\n*** End Patch'
    const expected = [
      { kind: 'file', text: 'Add File: n.txt' },
      { kind: 'add', text: 'hi' },
      { kind: 'file', text: 'Update File: m.rs' },
      { kind: 'hunk', text: '@@ fn x' },
      { kind: 'del', text: 'a' },
      { kind: 'add', text: 'b' },
      { kind: 'ctx', text: 'c' },
    ]
    expect(editDiff('apply_patch', patch)).toEqual(expected)
    expect(editDiff('apply_patch', JSON.stringify({ input: patch }))).toEqual(expected)
    expect(editDiff('shell', JSON.stringify({ command: ['apply_patch', patch] }))).toEqual(expected)
  })

  it('any other call, or arguments not of the tool shape, is no diff', () => {
    expect(editDiff('Bash', JSON.stringify({ command: 'ls' }))).toBeNull()
    expect(editDiff('Edit', 'not json')).toBeNull()
    expect(editDiff('Edit', JSON.stringify({ file_path: 'x', old_string: 1, new_string: 'b' }))).toBeNull()
    expect(editDiff('shell', JSON.stringify({ command: ['ls'] }))).toBeNull()
  })

  it('past the edit-step or the line bound the old text is removed and the new one added whole (the same on any machine)', () => {
    for (const count of [400, 1500]) {
      const before = Array.from({ length: count }, (_, index) => `old ${index}`).join('\n')
      const after = Array.from({ length: count }, (_, index) => `new ${index}`).join('\n')
      const lines = editDiff(
        'Edit',
        JSON.stringify({ file_path: 'x', old_string: before, new_string: after }),
      )!
      expect(lines.filter((line) => line.kind === 'del')).toHaveLength(count)
      expect(lines.filter((line) => line.kind === 'add')).toHaveLength(count)
      expect(lines.slice(1, 3)).toEqual([
        { kind: 'del', text: 'old 0' },
        { kind: 'del', text: 'old 1' },
      ])
    }
  })
})

describe('the page budget plan', () => {
  let seq = 0
  const event = (type: string, data: unknown): LoggedEvent =>
    ({ seq: seq++, time: '2026-01-01T00:00:00.000Z', type, data }) as LoggedEvent
  const turn = (sizer: PageSizer, turnNo: number, output: string): void => {
    sizer.add(event('turn/start', { turn: turnNo }))
    sizer.add(event('user/message', { message: { role: 'user', content: `step ${turnNo}` } }))
    sizer.add(event('tool/result', { message: { role: 'tool', tool_call_id: 'c', content: output } }))
    sizer.add(event('turn/end', { turn: turnNo, reason: 'completed' }))
  }

  it('keeps every event with whole texts when they fit, and shortens texts before leaving any event out', () => {
    seq = 0
    const small = new PageSizer({ showSourceRecords: false })
    for (let index = 1; index <= 10; index += 1) turn(small, index, 'x'.repeat(100))
    expect(small.plan(1_000_000)).toEqual({ itemCap: 16_000, gap: null })
    seq = 0
    const large = new PageSizer({ showSourceRecords: false })
    for (let index = 1; index <= 100; index += 1) turn(large, index, 'x'.repeat(20_000))
    const plan = large.plan(1_000_000)
    expect(plan.gap).toBeNull()
    expect(plan.itemCap).toBeLessThan(16_000)
  })

  it('when even short texts do not fit, leaves out the middle: the first events and the last turn stay', () => {
    seq = 0
    const sizer = new PageSizer({ showSourceRecords: false })
    for (let index = 1; index <= 1000; index += 1) turn(sizer, index, 'x'.repeat(5_000))
    const plan = sizer.plan(400_000)
    expect(plan.itemCap).toBe(240)
    expect(plan.gap).not.toBeNull()
    const { from, to } = plan.gap!
    expect(from).toBeGreaterThan(0)
    // The kept end starts at a turn start (seq 4k) and reaches the last event.
    expect((to + 1) % 4).toBe(0)
    expect(to).toBeLessThan(seq - 4)
  })

  it('hidden source records take no room; shown ones do', () => {
    const records = (show: boolean): PageSizer => {
      seq = 0
      const sizer = new PageSizer({ showSourceRecords: show })
      turn(sizer, 1, 'x')
      for (let index = 0; index < 2000; index += 1)
        sizer.add(event('import/source-record', { line: 'y'.repeat(2000) }))
      turn(sizer, 2, 'x')
      return sizer
    }
    expect(records(false).plan(100_000)).toEqual({ itemCap: 16_000, gap: null })
    expect(records(true).plan(100_000).gap).not.toBeNull()
  })
})
