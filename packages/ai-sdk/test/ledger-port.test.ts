// Type assertions, enforced by `pnpm typecheck` (tsc over test/); at run time they are no-ops.
import type { SessionStore as CoreStore, SessionWriter as CoreWriter } from '@agent-ledger/session-store'
import type {
  SessionStore as JsonlStore,
  SessionWriter as JsonlWriter,
} from '@agent-ledger/session-store-jsonl'
import { describe, expectTypeOf, it } from 'vitest'

import type { LedgerStore, LedgerWriter } from '../src/index.ts'

describe('the structural store interface', () => {
  it('is satisfied by the core store (any backend) and by the JSONL store', () => {
    expectTypeOf<CoreStore>().toExtend<LedgerStore>()
    expectTypeOf<CoreWriter>().toExtend<LedgerWriter>()
    expectTypeOf<JsonlStore>().toExtend<LedgerStore>()
    expectTypeOf<JsonlWriter>().toExtend<LedgerWriter>()
  })

  it('is not satisfied by a store without the repairing openWriter', () => {
    expectTypeOf<Omit<CoreStore, 'openWriter'>>().not.toExtend<LedgerStore>()
  })
})
