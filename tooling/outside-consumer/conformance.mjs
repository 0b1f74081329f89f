// Runs the backend conformance suite from the packed @agent-ledger/session-store tarball, as a
// third-party backend author would, with no test framework: describe/it are a tiny runner here.
import { createMemoryBackend, createMemoryStorage } from '@agent-ledger/session-store'
import { runBackendConformance } from '@agent-ledger/session-store/conformance'

const tests = []
let prefix = ''
const describe = (name, body) => {
  prefix = name
  body()
  prefix = ''
}
const it = (name, body) => tests.push({ name: `${prefix} > ${name}`, body })

runBackendConformance({
  name: 'memory (from the tarball)',
  describe,
  it,
  makeBackend: async () => {
    const storage = createMemoryStorage()
    let now = 0
    const instances = []
    const make = () => {
      const backend = createMemoryBackend({ storage, now: () => now })
      instances.push(backend)
      return backend
    }
    return {
      backend: make(),
      reopen: async () => make(),
      advanceTime: async (ms) => {
        now += ms
      },
      setFull: (full) => {
        for (const instance of instances) instance.testHooks.full = full
      },
      cleanup: async () => {
        for (const instance of instances) await instance.close()
      },
    }
  },
})

let failed = 0
for (const test of tests) {
  try {
    await test.body()
  } catch (error) {
    failed += 1
    console.error(`FAIL ${test.name}: ${error instanceof Error ? error.message : String(error)}`)
  }
}
if (tests.length === 0 || failed > 0) {
  console.error(`outside-consumer: conformance ${failed} of ${tests.length} failed`)
  process.exit(1)
}
console.log(`outside-consumer: conformance ${tests.length} passed`)
