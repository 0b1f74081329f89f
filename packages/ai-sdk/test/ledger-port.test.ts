// Type assertions, enforced by `pnpm typecheck` (tsc over test/); at run time they are no-ops.
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'
import type { JsonlStore } from '@agent-ledger/session-store-jsonl'
import { describe, expectTypeOf, it } from 'vitest'

import type { AiSdkSession } from '../src/index.ts'
import { openAiSdkSession } from '../src/index.ts'

describe("the adapter takes the core's store types", () => {
  it('is given the core store (any backend, createJsonlStore too) and holds the core writer', () => {
    expectTypeOf(openAiSdkSession).parameter(0).toEqualTypeOf<SessionStore>()
    expectTypeOf<JsonlStore>().toExtend<Parameters<typeof openAiSdkSession>[0]>()
    expectTypeOf<AiSdkSession['writer']>().toEqualTypeOf<SessionWriter>()
  })

  it('is not given a store without the repairing openWriter', () => {
    expectTypeOf<Omit<SessionStore, 'openWriter'>>().not.toExtend<Parameters<typeof openAiSdkSession>[0]>()
  })
})
