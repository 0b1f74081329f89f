// The session core's published declarations, type-checked as a backend author uses them.
import {
  createMemoryBackend,
  createSessionStore,
  SessionStoreError,
  type SessionBackend,
  type SessionStore as CoreStore,
  type SessionWriter,
} from '@agent-ledger/session-store'
import { runBackendConformance, type ConformanceHarness } from '@agent-ledger/session-store/conformance'

const backend: SessionBackend = createMemoryBackend()
const core: CoreStore = createSessionStore({ backend, clock: () => new Date().toISOString() })
async function write(): Promise<number> {
  const writer: SessionWriter = await core.create({ id: 'typed' })
  const event = writer.append({ type: 'turn/start', data: { turn: 1 } })
  // @ts-expect-error: the payload of a core event is typed
  writer.append({ type: 'turn/start', data: { turn: 'one' } })
  await writer.close()
  return event.seq
}
const harness = async (): Promise<ConformanceHarness> => ({ backend, cleanup: async () => {} })
const register = (): void =>
  runBackendConformance({
    name: 'typed',
    describe: (_name, body) => body(),
    it: () => {},
    makeBackend: harness,
  })
const isCoreError = (error: unknown): boolean => SessionStoreError.is(error, 'FENCED')
export { isCoreError, register, write }
