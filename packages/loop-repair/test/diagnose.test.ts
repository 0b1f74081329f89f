import { describe, expect, it } from 'vitest'

import { DiagnosticCode, diagnoseToolPairing, planRepair } from '../src/index.ts'
import { jsonClone, LogBuilder } from './support/log-builder.ts'

const read = { id: 'call-1', name: 'read_file' }
const bash = { id: 'call-2', name: 'bash' }

describe('diagnoseToolPairing', () => {
  it('reports nothing for a well-paired log', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read, bash])
    log.toolCall(read)
    log.toolResult('call-1')
    log.toolCall(bash)
    log.toolResult('call-2')
    log.assistant()
    log.turnEnd(1)
    expect(diagnoseToolPairing(log.events)).toEqual([])
  })

  it('R4: reports an orphan tool result whose assistant tool call is missing, and leaves the log alone', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.user('hi')
    // A foreign writer dropped the assistant message with the call; seqs stay dense.
    const orphan = log.toolResult('call-9', 'stale output')
    log.assistant()
    log.turnEnd(1)
    const before = jsonClone(log.events)

    const diagnostics = diagnoseToolPairing(log.events)

    expect(diagnostics).toEqual([
      {
        code: 'ORPHAN_TOOL_RESULT',
        seq: orphan,
        callId: 'call-9',
        message: expect.stringContaining('seq 2') as unknown,
      },
    ])
    expect(log.events).toEqual(before)
    expect(planRepair(log.events).events).toEqual([])
  })

  it('reports a second result for an already answered call as a duplicate', () => {
    const log = new LogBuilder()
    log.assistant([read])
    log.toolResult('call-1')
    const duplicate = log.toolResult('call-1')

    expect(diagnoseToolPairing(log.events)).toMatchObject([
      { code: DiagnosticCode.DUPLICATE_TOOL_RESULT, seq: duplicate, callId: 'call-1' },
    ])
  })

  it('reports a result that arrives after a newer assistant message as out of order', () => {
    const log = new LogBuilder()
    log.assistant([read])
    log.assistant()
    const late = log.toolResult('call-1')

    expect(diagnoseToolPairing(log.events)).toMatchObject([
      { code: DiagnosticCode.TOOL_RESULT_OUT_OF_ORDER, seq: late, callId: 'call-1' },
    ])
  })

  it('R2: does not report repair placeholders for older messages as out of order', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.turnStart(2)
    log.assistant()
    log.turnEnd(2)
    log.appendAll(planRepair(log.events).events)

    expect(diagnoseToolPairing(log.events)).toEqual([])
  })

  it('reports dangling calls at their assistant message, and none once repaired', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    const assistantSeq = log.assistant([read, bash])
    log.toolCall(bash)

    expect(diagnoseToolPairing(log.events)).toMatchObject([
      { code: DiagnosticCode.DANGLING_TOOL_CALL, seq: assistantSeq, callId: 'call-1' },
      { code: DiagnosticCode.DANGLING_TOOL_CALL, seq: assistantSeq, callId: 'call-2' },
    ])
    log.appendAll(planRepair(log.events).events)
    expect(diagnoseToolPairing(log.events)).toEqual([])
  })

  it('R3: with ids reused across turns, reports only the dangling call of the later turn', () => {
    const log = new LogBuilder()
    log.turnStart(1)
    log.assistant([read])
    log.toolResult('call-1')
    log.assistant()
    log.turnEnd(1)
    log.turnStart(2)
    const second = log.assistant([read])

    expect(diagnoseToolPairing(log.events)).toMatchObject([
      { code: 'DANGLING_TOOL_CALL', seq: second, callId: 'call-1' },
    ])
  })

  it('reports a tool/call with no request, and one that starts an already started call', () => {
    const log = new LogBuilder()
    const unknown = log.toolCall({ id: 'call-7', name: 'bash' })
    log.assistant([read])
    log.toolCall(read)
    const twice = log.toolCall(read)
    log.toolResult('call-1')

    expect(diagnoseToolPairing(log.events)).toMatchObject([
      { code: DiagnosticCode.TOOL_CALL_WITHOUT_REQUEST, seq: unknown, callId: 'call-7' },
      { code: DiagnosticCode.TOOL_CALL_WITHOUT_REQUEST, seq: twice, callId: 'call-1' },
    ])
  })

  it('orders findings by seq', () => {
    const log = new LogBuilder()
    log.assistant([read])
    log.toolResult('ghost')
    log.toolResult('ghost-2')

    expect(diagnoseToolPairing(log.events).map((finding) => [finding.seq, finding.code])).toEqual([
      [0, 'DANGLING_TOOL_CALL'],
      [1, 'ORPHAN_TOOL_RESULT'],
      [2, 'ORPHAN_TOOL_RESULT'],
    ])
  })

  it('has string codes equal to their names', () => {
    for (const [name, value] of Object.entries(DiagnosticCode)) expect(value).toBe(name)
  })
})
