import { describe, expect, it } from 'vitest'

import { AgentLedgerError, SessionEventsError } from '../src/index.ts'

class ExampleError extends AgentLedgerError<
  'ALPHA' | 'BETA',
  { readonly expected: number; readonly found: number }
> {
  override readonly name = 'ExampleError'
}

describe('AgentLedgerError', () => {
  it('carries code, message, typed details and cause; is an Error with a stack', () => {
    const cause = new Error('underneath')
    const error = new ExampleError({
      code: 'BETA',
      message: 'Input x: expected 1, found 2.',
      details: { expected: 1, found: 2 },
      cause,
    })
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('ExampleError')
    expect(error.code).toBe('BETA')
    expect(error.details.found).toBe(2)
    expect(error.cause).toBe(cause)
    expect(error.stack).toContain('ExampleError')
  })

  it('without details has frozen empty details and no cause property', () => {
    const error = new AgentLedgerError({ code: 'X', message: 'm' })
    expect(error.details).toEqual({})
    expect(Object.isFrozen(error.details)).toBe(true)
    expect('cause' in error).toBe(false)
  })

  it('is() recognises every subclass, optionally by code, and refuses look-alikes without the marker', () => {
    const events = new SessionEventsError({ code: 'INVALID_EVENT', message: 'bad' })
    expect(AgentLedgerError.is(events)).toBe(true)
    expect(AgentLedgerError.is(events, 'INVALID_EVENT', 'TOO_DEEP')).toBe(true)
    expect(AgentLedgerError.is(events, 'TOO_DEEP')).toBe(false)
    const lookalike = new Error('x')
    Object.defineProperty(lookalike, 'code', { value: 'INVALID_EVENT' })
    expect(AgentLedgerError.is(lookalike)).toBe(false)
    expect(AgentLedgerError.is(null)).toBe(false)
    expect(AgentLedgerError.is('INVALID_EVENT')).toBe(false)
  })

  it('is() works across copies of the package: the marker is a registered symbol, not the class', () => {
    // What a second copy of this package (built code beside source code) creates: another
    // class, the same Symbol.for marker.
    const fromOtherCopy = new Error('m')
    Object.defineProperty(fromOtherCopy, 'code', { value: 'ALPHA' })
    Object.defineProperty(fromOtherCopy, Symbol.for('@agent-ledger/error'), { value: true })
    expect(fromOtherCopy instanceof AgentLedgerError).toBe(false)
    expect(AgentLedgerError.is(fromOtherCopy, 'ALPHA')).toBe(true)
  })
})
