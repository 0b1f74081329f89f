/** Every package's error class extends the one base, `AgentLedgerError` (issue 23 item 4). */
import { AgentLedgerError, SessionEventsError } from '@agent-ledger/session-events'
import { ImportError } from '@agent-ledger/import'
import { ProjectionError } from '@agent-ledger/session-projection'
import { SessionStoreError } from '@agent-ledger/session-store'
import { ConformanceError } from '@agent-ledger/session-store/conformance'
import { JsonlStoreError } from '@agent-ledger/session-store-jsonl'
import { ZstdFrameError } from '@agent-ledger/session-store-jsonl/format'
import { describe, expect, it } from 'vitest'

import { CliError } from '../src/index.ts'

describe('one error base', () => {
  it.each([
    [
      'SessionEventsError',
      new SessionEventsError({ code: 'INVALID_EVENT', message: 'm' }),
      (value: unknown) => SessionEventsError.is(value),
    ],
    [
      'ProjectionError',
      new ProjectionError({ code: 'SEQ_GAP', message: 'm' }),
      (value: unknown) => ProjectionError.is(value),
    ],
    [
      'SessionStoreError',
      new SessionStoreError({ code: 'FENCED', message: 'm' }),
      (value: unknown) => SessionStoreError.is(value),
    ],
    [
      'JsonlStoreError',
      new JsonlStoreError({ code: 'SYMLINK_REFUSED', message: 'm', file: 'f' }),
      (value: unknown) => JsonlStoreError.is(value),
    ],
    [
      'ZstdFrameError',
      new ZstdFrameError({ code: 'TORN_FRAME', message: 'm' }),
      (value: unknown) => ZstdFrameError.is(value),
    ],
    [
      'ImportError',
      new ImportError({ code: 'EMPTY_SOURCE', message: 'm' }),
      (value: unknown) => ImportError.is(value),
    ],
    ['CliError', new CliError({ code: 'USAGE', message: 'm' }), (value: unknown) => CliError.is(value)],
    [
      'ConformanceError',
      new ConformanceError('m'),
      (value: unknown) => AgentLedgerError.is(value, 'CONFORMANCE_FAILED'),
    ],
  ] as const)('%s extends AgentLedgerError, keeps its own is() and a code', (name, error, is) => {
    expect(error).toBeInstanceOf(AgentLedgerError)
    expect(AgentLedgerError.is(error, error.code)).toBe(true)
    expect(is(error)).toBe(true)
    expect(error.name).toBe(name)
    expect(typeof error.details).toBe('object')
  })

  it("each class's is() refuses the others (the per-class marker stays)", () => {
    const store = new SessionStoreError({ code: 'FENCED', message: 'm' })
    expect(JsonlStoreError.is(store)).toBe(false)
    expect(CliError.is(store)).toBe(false)
    expect(
      SessionStoreError.is(new JsonlStoreError({ code: 'FENCED' as never, message: 'm', file: '' })),
    ).toBe(false)
  })
})
