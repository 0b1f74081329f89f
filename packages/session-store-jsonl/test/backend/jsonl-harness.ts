/**
 * Test harness of the JSONL backend: a fresh root in the system temp directory, a settable
 * lease clock, and a file system that can be made "full" (every call that needs space fails
 * with ENOSPC, as on a full disk; reads, truncates, unlinks and fsyncs keep working).
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { ConformanceHarness } from '@agent-ledger/session-store/conformance'

import { createJsonlBackend } from '../../src/index.ts'
import type { JsonlBackend } from '../../src/index.ts'
import { nodeFsOps } from '../../src/fs-ops.ts'
import type { FileHandleOps, FsOps } from '../../src/fs-ops.ts'

function enospc(op: string): Error {
  const error = new Error(`ENOSPC: no space left on device, ${op} (test: full disk)`)
  Object.defineProperty(error, 'code', { value: 'ENOSPC', enumerable: true })
  return error
}

/** A file system that fails every space-needing call with ENOSPC while `state.full`. */
function fullableFs(state: { full: boolean }): FsOps {
  const wrap = (handle: FileHandleOps): FileHandleOps => ({
    ...handle,
    path: handle.path,
    read: (...args) => handle.read(...args),
    write: (buffer, position) =>
      state.full ? Promise.reject(enospc('write')) : handle.write(buffer, position),
    datasync: () => handle.datasync(),
    sync: () => handle.sync(),
    truncate: (length) => handle.truncate(length),
    stat: () => handle.stat(),
    chmod: (mode) => handle.chmod(mode),
    close: () => handle.close(),
  })
  return {
    ...nodeFsOps,
    async open(path, flags, mode) {
      if (state.full && (flags & constants.O_CREAT) !== 0) throw enospc('open')
      return wrap(await nodeFsOps.open(path, flags, mode))
    },
    mkdir: (path, mode) => (state.full ? Promise.reject(enospc('mkdir')) : nodeFsOps.mkdir(path, mode)),
    link: (from, to) => (state.full ? Promise.reject(enospc('link')) : nodeFsOps.link(from, to)),
    rename: (from, to) => (state.full ? Promise.reject(enospc('rename')) : nodeFsOps.rename(from, to)),
  }
}

const V0_FIXTURE = new URL('../fixtures/v0/normal-tool-calls.jsonl', import.meta.url)

/**
 * Plants a v0 session (`<id>/session.jsonl`, a recorded fixture) under `root`.
 *
 * @param root - The store root.
 * @param id - The session id.
 * @returns Its migrated event count (the v0 header is not an event) and a fingerprint of its directory.
 */
async function plantV0Session(
  root: string,
  id: string,
): Promise<{ readonly events: number; readonly fingerprint: () => Promise<string> }> {
  const text = await readFile(V0_FIXTURE, 'utf8')
  const directory = join(root, id)
  await mkdir(directory, { recursive: true, mode: 0o700 })
  await writeFile(join(directory, 'session.jsonl'), text, { mode: 0o600 })
  const events = text.split('\n').filter((line) => line !== '').length - 1
  const fingerprint = async (): Promise<string> => {
    const hash = createHash('sha256')
    for (const name of (await readdir(directory)).sort()) {
      hash.update(`${name}\n`)
      hash.update(await readFile(join(directory, name)))
    }
    return hash.digest('hex')
  }
  return { events, fingerprint }
}

/** A fresh root for one test. */
export async function tempRoot(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'jsonl-backend-'))
}

/**
 * A conformance harness over a fresh root.
 *
 * @param encoding - The encoding of new sessions.
 * @returns The harness.
 */
export async function jsonlHarness(encoding: 'plain' | 'zstd'): Promise<ConformanceHarness> {
  const root = await tempRoot()
  const state = { full: false }
  let now = Date.now()
  const instances: JsonlBackend[] = []
  const make = (): JsonlBackend => {
    const backend = createJsonlBackend({
      root,
      encoding,
      fs: fullableFs(state),
      now: () => now,
      followPollMs: 200,
      lock: { heartbeatMs: 0 },
    })
    instances.push(backend)
    return backend
  }
  return {
    backend: make(),
    reopen: () => Promise.resolve(make()),
    advanceTime: (ms) => {
      now += ms
      return Promise.resolve()
    },
    plantOlderSession: (id) => plantV0Session(root, id),
    setFull: (full) => {
      state.full = full
    },
    cleanup: async () => {
      for (const instance of instances) await instance.close()
      await rm(root, { recursive: true, force: true })
    },
  }
}
