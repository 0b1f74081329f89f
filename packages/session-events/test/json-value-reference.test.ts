import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { assertJsonValue, SessionEventsError, SessionEventsErrorCode } from '../src/index.ts'
import type { JsonLimits } from '../src/index.ts'

/*
 * assertJsonValue builds a value's path only when it throws (and stacks no valid scalar):
 * it must refuse exactly what, where and with the words the version before did. That
 * version (main at 224c64e) is kept below as the reference, verbatim but for its name.
 */

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null
    return `an instance of ${prototype?.constructor?.name ?? 'an unknown class'}`
  }
  return `a ${typeof value}`
}

function referenceTooLarge(path: string, limits: JsonLimits): SessionEventsError {
  return new SessionEventsError({
    code: SessionEventsErrorCode.EVENT_TOO_LARGE,
    field: path,
    message: `${path} is too large: expected at most ${limits.maxEntries} array elements and object keys, found more`,
  })
}

function referenceAssertJsonValue(value: unknown, limits: JsonLimits, path = 'data'): void {
  const ancestors = new Set<object>()
  const stack: { value: unknown; depth: number; path: string; exit: boolean }[] = [
    { value, depth: 0, path, exit: false },
  ]
  let entries = 0
  while (stack.length > 0) {
    const frame = stack.pop()!
    const current = frame.value
    if (frame.exit) {
      ancestors.delete(current as object)
      continue
    }
    switch (typeof current) {
      case 'string':
      case 'boolean':
        continue
      case 'number':
        if (!Number.isFinite(current)) {
          throw new SessionEventsError({
            code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
            field: frame.path,
            message: `${frame.path} cannot be written as JSON: expected a finite number, found ${String(current)}`,
          })
        }
        continue
      case 'object':
        break
      default:
        throw new SessionEventsError({
          code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
          field: frame.path,
          message: `${frame.path} cannot be written as JSON: expected plain JSON data, found a ${typeof current}`,
        })
    }
    if (current === null) continue
    const depth = frame.depth + 1
    if (depth > limits.maxDepth) {
      throw new SessionEventsError({
        code: SessionEventsErrorCode.TOO_DEEP,
        field: frame.path,
        message: `${path} nests too deeply: expected at most ${limits.maxDepth} levels, found more at ${frame.path}`,
      })
    }
    if (ancestors.has(current)) {
      throw new SessionEventsError({
        code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
        field: frame.path,
        message: `${frame.path} cannot be written as JSON: expected a tree, found a cycle back to an enclosing value`,
      })
    }
    ancestors.add(current)
    stack.push({ value: current, depth: frame.depth, path: frame.path, exit: true })
    if (Array.isArray(current)) {
      entries += current.length
      if (entries > limits.maxEntries) throw referenceTooLarge(path, limits)
      for (let index = current.length - 1; index >= 0; index -= 1) {
        const element: unknown = current[index]
        if (element === undefined) {
          throw new SessionEventsError({
            code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
            field: `${frame.path}[${index}]`,
            message: `${frame.path}[${index}] cannot be written as JSON: expected a value, found undefined in an array`,
          })
        }
        stack.push({ value: element, depth, path: `${frame.path}[${index}]`, exit: false })
      }
      continue
    }
    const prototype: unknown = Object.getPrototypeOf(current)
    if (prototype !== Object.prototype && prototype !== null) {
      throw new SessionEventsError({
        code: SessionEventsErrorCode.UNSERIALIZABLE_EVENT,
        field: frame.path,
        message: `${frame.path} cannot be written as JSON: expected a plain object, found ${describeValue(current)}`,
      })
    }
    const keys = Object.keys(current)
    entries += keys.length
    if (entries > limits.maxEntries) throw referenceTooLarge(path, limits)
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index]!
      const child: unknown = (current as Record<string, unknown>)[key]
      if (child === undefined) continue
      stack.push({ value: child, depth, path: `${frame.path}.${key}`, exit: false })
    }
  }
}

function outcome(check: () => void): string {
  try {
    check()
    return 'ok'
  } catch (error) {
    if (!SessionEventsError.is(error)) throw error
    return `${error.code} ${error.field} ${error.message}`
  }
}

class Thing {
  readonly a = 1
}

/** JSON-like values with what the check refuses mixed in: NaN, infinities, undefined, functions, bigints, class instances. */
const hostile = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.boolean(),
    fc.double(),
    fc.constantFrom<unknown>(
      null,
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      10n,
      () => 1,
      new Thing(),
      new Date(0),
    ),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', '0', '__proto__', 'x y'), tie('value'), { maxKeys: 4 }),
  ),
})).value

describe('assertJsonValue refuses as before (reference: main at 224c64e)', () => {
  it('same outcome, code, field and message on random hostile values, within tight and default limits', () => {
    fc.assert(
      fc.property(
        hostile,
        fc.constantFrom(2, 3, 256),
        fc.constantFrom(3, 8, 5_000_000),
        (value, maxDepth, maxEntries) => {
          const limits = { maxDepth, maxEntries }
          expect(outcome(() => assertJsonValue(value, limits, 'event'))).toBe(
            outcome(() => referenceAssertJsonValue(value, limits, 'event')),
          )
        },
      ),
      { numRuns: 4000 },
    )
  })

  it('same outcome on cycles', () => {
    const cyclic: Record<string, unknown> = { a: [1, { b: 2 }] }
    ;((cyclic['a'] as unknown[])[1] as Record<string, unknown>)['back'] = cyclic
    const limits = { maxDepth: 256, maxEntries: 100 }
    const found = outcome(() => assertJsonValue(cyclic, limits))
    expect(found).toContain('data.a[1].back')
    expect(found).toBe(outcome(() => referenceAssertJsonValue(cyclic, limits)))
  })
})
