import { crc32c as nativeCrc32c } from '@node-rs/crc32'
import { describe, it } from 'vitest'

import { createMemoryBackend, createMemoryStorage } from '../src/index.ts'
import type { MemoryBackend } from '../src/index.ts'
import { runBackendConformance } from '../src/conformance/index.ts'

runBackendConformance({
  name: 'memory',
  describe,
  it,
  makeBackend: () => {
    const storage = createMemoryStorage()
    let now = 0
    const instances: MemoryBackend[] = []
    const make = (): MemoryBackend => {
      const backend = createMemoryBackend({ storage, now: () => now })
      instances.push(backend)
      return backend
    }
    const backend = make()
    return Promise.resolve({
      backend,
      reopen: () => Promise.resolve(make()),
      advanceTime: (ms: number) => {
        now += ms
        return Promise.resolve()
      },
      setFull: (full: boolean) => {
        for (const instance of instances) instance.testHooks.full = full
      },
      injectFault: () => {
        // The memory backend's one storage fault: a full disk, refused by its acquire.
        for (const instance of instances) instance.testHooks.full = true
        return Promise.resolve({ code: 'DISK_FULL' })
      },
      cleanup: async () => {
        for (const instance of instances) await instance.close()
      },
    })
  },
})

runBackendConformance({
  name: 'memory without server-side fork or follow, offering the native CRC-32C',
  describe,
  it,
  makeBackend: () => {
    const storage = createMemoryStorage()
    let now = 0
    const backend = createMemoryBackend({
      storage,
      now: () => now,
      offer: { follow: false, fork: false, checkpoints: false },
      crc32c: (bytes) => nativeCrc32c(bytes) >>> 0,
    })
    return Promise.resolve({
      backend,
      advanceTime: (ms: number) => {
        now += ms
        return Promise.resolve()
      },
      cleanup: () => backend.close(),
    })
  },
})
