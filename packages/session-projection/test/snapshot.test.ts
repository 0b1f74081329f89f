import { describe, expect, it } from 'vitest'

import { createProjection, ProjectionError, restoreProjection, SNAPSHOT_VERSION } from '../src/index.ts'
import type { ProjectionSnapshot } from '../src/index.ts'
import {
  assistant,
  describeMessages,
  newLog,
  system,
  toolCall,
  toolResult,
  turnStart,
  user,
} from './support/events.ts'
import { testRegistry } from './support/random-log.ts'

function sampleLog() {
  const log = newLog({ registry: testRegistry })
  log.append(system('sys')) // 0
  log.append(turnStart(1)) // 1
  log.append(user('u')) // 2
  log.append(assistant(null, ['c1'])) // 3
  log.append(toolCall('c1')) // 4
  log.append({ type: 'compaction/start', data: { compactionId: 'k', startSeq: 2, endSeq: 2 } }) // 5
  log.append({ type: 'ai-sdk/note', data: { text: 'n' }, ignorable: true } as never) // 6
  return log
}

/** Walks a value and reports the first thing that is not plain JSON data. */
function firstNonJson(value: unknown, path = '$'): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = firstNonJson(item, `${path}[${index}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [key, item] of Object.entries(value)) {
      const found = firstNonJson(item, `${path}.${key}`)
      if (found !== undefined) return found
    }
    return undefined
  }
  return path
}

function errorOf(run: () => unknown): ProjectionError {
  try {
    run()
  } catch (error) {
    if (ProjectionError.is(error)) return error
    throw error
  }
  throw new Error('expected a ProjectionError')
}

describe('snapshot and restoreProjection', () => {
  it('is plain JSON data with snapshotVersion 2', () => {
    const snapshot = sampleLog().projection.snapshot()
    expect(snapshot.snapshotVersion).toBe(SNAPSHOT_VERSION)
    expect(SNAPSHOT_VERSION).toBe(2)
    expect(firstNonJson(snapshot)).toBeUndefined()
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot)
    expect(snapshot.openCompaction).toEqual({ compactionId: 'k', seq: 5, startSeq: 2, endSeq: 2 })
    expect(snapshot.repairState.pendingCalls).toHaveLength(1)
  })

  it('restores every field and continues folding as if nothing happened', () => {
    const log = sampleLog()
    const restored = restoreProjection(
      JSON.parse(JSON.stringify(log.projection.snapshot())) as ProjectionSnapshot,
      {
        registry: testRegistry,
      },
    )
    expect(restored.nextSeq).toBe(7)
    expect(restored.lastEvent).toEqual(log.events[6])
    expect(restored.lastTime).toBe(log.events[6]!.time)
    expect(restored.stats).toEqual(log.projection.stats)
    expect(restored.deriveMessages()).toEqual(log.deriveMessages())
    expect(Object.isFrozen(restored.deriveMessages()[0])).toBe(true)
    const next = log.append(toolResult('c1', 'r1'))
    restored.apply(JSON.parse(JSON.stringify(next)))
    expect(describeMessages(restored.deriveMessages())).toEqual(describeMessages(log.deriveMessages()))
    expect(restored.snapshot()).toEqual(log.projection.snapshot())
  })

  it("carries a tool result's isError and code on its node, the highest turn and the annotations", () => {
    const log = sampleLog()
    log.append({
      type: 'tool/result',
      data: {
        message: { role: 'tool', tool_call_id: 'c1', content: 'lost' },
        isError: true,
        code: 'TOOL_OUTCOME_UNKNOWN',
      },
    })
    log.append({ type: 'turn/end', data: { turn: 1, reason: 'interrupted' } })
    log.append(turnStart(7))
    log.append({ type: 'openai-agents/mark', data: { n: 1 }, ignorable: true } as never)
    log.append({ type: 'vendor/mark', data: { n: 2 }, ignorable: true } as never)
    const restored = restoreProjection(
      JSON.parse(JSON.stringify(log.projection.snapshot())) as ProjectionSnapshot,
      { registry: testRegistry },
    )
    const result = restored.surface().find((node) => node.type === 'tool/result')
    expect([result?.seq, result?.isError, result?.code]).toEqual([7, true, 'TOOL_OUTCOME_UNKNOWN'])
    expect(restored.surface().filter((node) => 'isError' in node || 'code' in node)).toHaveLength(1)
    expect(restored.stats.highestTurn).toBe(7)
    expect(restored.annotations().map((event) => [event.seq, event.type])).toEqual([
      [6, 'ai-sdk/note'],
      [10, 'openai-agents/mark'],
    ])
    expect(restored.annotations()).toEqual(log.projection.annotations())
    expect(Object.isFrozen(restored.annotations()[1]!.data)).toBe(true)
  })

  it('round-trips the empty projection', () => {
    const restored = restoreProjection(
      JSON.parse(JSON.stringify(createProjection().snapshot())) as ProjectionSnapshot,
    )
    expect(restored.nextSeq).toBe(0)
    expect(restored.deriveMessages()).toEqual([])
  })

  it('refuses an unknown snapshotVersion with SNAPSHOT_UNSUPPORTED', () => {
    const snapshot = sampleLog().projection.snapshot()
    // 1: the layout before surface nodes carried isError/code and snapshots carried annotations.
    for (const version of [1, 3, 0, '2', undefined]) {
      const error = errorOf(() =>
        restoreProjection({ ...snapshot, snapshotVersion: version } as unknown as ProjectionSnapshot),
      )
      expect([error.code, error.expected]).toEqual(['SNAPSHOT_UNSUPPORTED', 2])
    }
  })

  it('refuses a malformed snapshot with INVALID_SNAPSHOT naming the field', () => {
    const good = JSON.parse(JSON.stringify(sampleLog().projection.snapshot())) as Record<string, unknown>
    const remove = Symbol('remove')
    const cases: [field: string, path: readonly (string | number)[], value: unknown][] = [
      ['nextSeq', ['nextSeq'], -1],
      ['stats.turns', ['stats', 'turns'], remove],
      ['surface[1].message', ['surface', 1, 'message'], { role: 'user' }],
      ['surface[1].message.role', ['surface', 1, 'message'], { role: 'assistant', content: 'x' }],
      ['surface[1].seq', ['surface', 1, 'seq'], 0],
      ['surface[0].type', ['surface', 0, 'type'], 'turn/start'],
      ['repairState.pendingCalls[0].assistantSeq', ['repairState', 'pendingCalls', 0, 'assistantSeq'], 'x'],
      ['lastEvent', ['lastEvent'], { seq: 6 }],
      ['lastTime', ['lastTime'], '2000-01-01T00:00:00.000Z'],
      ['openCompaction.compactionId', ['openCompaction', 'compactionId'], 5],
      ['stats.highestTurn', ['stats', 'highestTurn'], remove],
      ['surface[1].isError', ['surface', 1, 'isError'], true],
      ['surface[1].code', ['surface', 1, 'code'], 'TOOL_NOT_STARTED'],
      ['annotations', ['annotations'], [{}, {}]],
      ['annotations[0].seq', ['annotations', 0, 'seq'], 7],
      ['annotations[0]', ['annotations', 0, 'ignorable'], false],
      ['annotations[0].type', ['annotations', 0, 'type'], 'test/note'],
    ]
    for (const [field, path, value] of cases) {
      const copy = JSON.parse(JSON.stringify(good)) as Record<string | number, unknown>
      let parent = copy
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
      if (value === remove) delete parent[path.at(-1)!]
      else parent[path.at(-1)!] = value
      const error = errorOf(() =>
        restoreProjection(copy as unknown as ProjectionSnapshot, { registry: testRegistry }),
      )
      expect([error.code, error.field]).toEqual(['INVALID_SNAPSHOT', field])
    }
    expect(errorOf(() => restoreProjection(null as unknown as ProjectionSnapshot)).code).toBe(
      'INVALID_SNAPSHOT',
    )
  })
})
