import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { bundleChild, spawnChild } from './support/children.ts'
import { checkCrashedSession, createCrashSession, splitLines } from './support/crash-harness.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w7a-'))
const SEED = 77
/** `ulimit -f` takes 1024-byte blocks in bash: a 64 KiB file size limit. */
const LIMIT_BLOCKS = 64

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W7(a): disk full under ulimit -f', () => {
  it(
    'W7(a): the kernel short-writes then EFBIG: flush rejects DISK_FULL, the file is truncated back to the durable offset, acked events intact',
    async () => {
      const root = join(scratch, 'root')
      const id = 'ulimit'
      await createCrashSession(root, id)
      const bundle = await bundleChild('crash-writer.ts')
      // SIGXFSZ would kill the writer; ignored (inherited across exec), the write returns EFBIG instead.
      const script = `trap "" XFSZ; ulimit -f ${LIMIT_BLOCKS}; exec "$@"`
      const child = spawnChild('bash', [
        '-c',
        script,
        'bash',
        process.execPath,
        bundle,
        root,
        id,
        String(SEED),
        '5',
        '100000',
        'fill',
      ])
      const failedLine = await child.waitForLine((line) => line.startsWith('FAILED '), { timeoutMs: 120_000 })
      const exit = await child.exited
      expect(exit).toEqual({ code: 0, signal: null })
      const report = JSON.parse(failedLine.slice('FAILED '.length)) as {
        code: string
        details: Record<string, unknown>
        durableSeq: number
        buffered: number
      }
      expect(report.code).toBe('DISK_FULL')
      expect(report.details['cause']).toBe('EFBIG')
      expect(report.details['bytesAttempted']).toBeGreaterThan(0)
      expect(report.buffered).toBe(5)
      const acks = child.lines.filter((line) => line.startsWith('ACK ')).map((line) => Number(line.slice(4)))
      const lastAck = Math.max(...acks)
      expect(report.durableSeq).toBe(lastAck)
      // Truncated back to the end of the last acked line: no partial line, below the limit.
      const log = readFileSync(join(root, id, LOG_FILE_NAME))
      const { lines, tail } = splitLines(log)
      expect(tail.length).toBe(0)
      expect(lines.length).toBe(lastAck + 2)
      expect(statSync(join(root, id, LOG_FILE_NAME)).size).toBeLessThanOrEqual(LIMIT_BLOCKS * 1024)
      const check = await checkCrashedSession({ root, id, seed: SEED, lastAck })
      expect(check).toMatchObject({
        ackedLost: 0,
        foreignLines: 0,
        holes: 0,
        tornTailBytes: 0,
        openError: null,
      })
    },
    testTime(180_000),
  )
})
