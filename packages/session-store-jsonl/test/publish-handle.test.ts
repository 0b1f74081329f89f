import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import type { FileHandleOps, FsOps } from '../src/fs-ops.ts'
import { PUBLISH_POINTS } from '../src/publish-checks.ts'
import { publishFile } from '../src/publish.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-publish-handle-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** An FsOps whose handles report whether they were closed. */
function tracking(): { fs: FsOps; open: Set<string> } {
  const open = new Set<string>()
  const fs: FsOps = {
    ...nodeFsOps,
    async open(path, flags, mode) {
      const handle = await nodeFsOps.open(path, flags, mode)
      open.add(path)
      const tracked: FileHandleOps = Object.create(handle) as FileHandleOps
      tracked.close = async () => {
        open.delete(path)
        await handle.close()
      }
      return tracked
    },
  }
  return { fs, open }
}

describe('publishFile closes its temp handle on every way out', () => {
  // The leak behind "DEP0137 Closing a FileHandle object on garbage collection" in the test
  // output: a failure after the link (here injected at each later point) left the temp's
  // handle open for the garbage collector to close.
  for (const failAt of PUBLISH_POINTS) {
    it(`a failure at ${failAt} leaves no handle open`, async () => {
      const directory = join(scratch, failAt)
      mkdirSync(directory, { mode: 0o700 })
      const { fs, open } = tracking()
      await expect(
        publishFile({
          fs,
          directory,
          target: 'session.v4.jsonl',
          kind: 'compress',
          content: async function* content() {
            await Promise.resolve()
            yield Buffer.from('line\n')
          },
          hooks: {
            at(point) {
              if (point === failAt) throw new Error(`injected at ${point}`)
            },
          },
        }),
      ).rejects.toThrow(`injected at ${failAt}`)
      expect([...open]).toEqual([])
    })
  }
})
