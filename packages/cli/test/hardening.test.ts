/**
 * Issue 10 (the outside attack), CLI side: special files never hang verify/inspect/list
 * (S10), a CRLF-converted log is damage (T7), `export -o` never overwrites without
 * `--force` (S13), and a full disk prints as DISK_FULL (W12). Faults are real: mkfifo, a
 * listening unix socket, mknod, a CRLF rewrite, a small tmpfs.
 */
import { spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { cli, logPath, makeRoot, testStore, writeSession } from './support/sessions.ts'

let root: string
let cleanup: () => void
const servers: Server[] = []

beforeEach(async () => {
  ;({ root, cleanup } = makeRoot())
  await writeSession(testStore(root), 'a1', { turns: 1 })
  await writeSession(testStore(root), 'b1', { turns: 1 })
})
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()))
  cleanup()
})

/** A blocked open never returns: the explicit timeout turns a regression into a failure. */
const NO_HANG_MS = 20_000

type Kind = 'fifo' | 'socket' | 'character-device'

async function makeSpecial(kind: Kind, path: string): Promise<boolean> {
  let status: number | null = 0
  if (kind === 'fifo') status = spawnSync('mkfifo', [path]).status
  else if (kind === 'character-device') status = spawnSync('mknod', [path, 'c', '1', '3']).status
  else {
    const server = createServer()
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(path, resolve))
  }
  if (status !== 0) console.log(`S10: skipped the ${kind} case: cannot create one here (not root?)`)
  return status === 0
}

describe('S10: special files in the CLI', () => {
  for (const kind of ['fifo', 'socket', 'character-device'] as const) {
    it(
      `S10: a ${kind} at a log: verify and inspect exit 1 with NOT_REGULAR_FILE, list shows it as a problem and lists the rest`,
      async () => {
        unlinkSync(logPath(root, 'b1'))
        if (!(await makeSpecial(kind, logPath(root, 'b1')))) return
        for (const command of ['verify', 'inspect']) {
          const run = await cli([command, join(root, 'b1')])
          expect([command, run.code]).toEqual([command, 1])
          expect(run.stderr).toMatch(/^agent-ledger: NOT_REGULAR_FILE in .*b1\/session\.v4\.jsonl/)
        }
        const listed = await cli(['list', root, '--json'])
        expect(listed.code).toBe(0)
        const report = JSON.parse(listed.stdout) as {
          sessions: { id: string }[]
          problems: { id: string; error: { code: string } }[]
        }
        expect(report.sessions.map((session) => session.id)).toEqual(['a1'])
        expect(report.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
          ['b1', 'NOT_REGULAR_FILE'],
        ])
        const text = await cli(['list', root])
        expect(text.stdout).toMatch(/b1 {2}PROBLEM NOT_REGULAR_FILE/)
      },
      NO_HANG_MS,
    )

    it(
      `S10: a ${kind} at writer.lock: inspect and verify answer without blocking`,
      async () => {
        if (!(await makeSpecial(kind, join(root, 'a1', 'writer.lock')))) return
        expect((await cli(['verify', join(root, 'a1')])).code).toBe(0)
        const inspected = await cli(['inspect', join(root, 'a1')])
        expect(inspected.code).toBe(0)
        expect((await cli(['list', root])).code).toBe(0)
      },
      NO_HANG_MS,
    )
  }
})

describe('T7: a converted log is damage in the CLI', () => {
  it('T7: verify of a CRLF-converted log exits 1 (damaged, CORRUPT_LINE on line 1) and changes nothing', async () => {
    const path = logPath(root, 'a1')
    writeFileSync(path, readFileSync(path, 'utf8').replaceAll('\n', '\r\n'))
    const before = readFileSync(path)
    const run = await cli(['verify', join(root, 'a1')])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/^damaged: /)
    expect(run.stderr).toMatch(/^agent-ledger: CORRUPT_LINE in .*a1\/session\.v4\.jsonl line 1 \(offset 0\)/)
    expect(readFileSync(path).equals(before)).toBe(true)
  })
})

describe('S13: export -o never overwrites without --force', () => {
  it('S13: an existing output file is refused with OUTPUT_EXISTS (exit 2), byte for byte untouched; --force replaces it', async () => {
    const output = join(root, 'transcript.md')
    writeFileSync(output, 'precious notes\n')
    const refused = await cli(['export', join(root, 'a1'), '--format', 'md', '-o', output])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(
      /^agent-ledger: OUTPUT_EXISTS: export: refusing to overwrite .*transcript\.md/,
    )
    expect(readFileSync(output, 'utf8')).toBe('precious notes\n')
    const forced = await cli(['export', join(root, 'a1'), '--format', 'md', '-o', output, '--force'])
    expect(forced.code).toBe(0)
    expect(readFileSync(output, 'utf8')).toMatch(/a1/)
    // A new file needs no --force.
    const fresh = join(root, 'fresh.html')
    expect((await cli(['export', join(root, 'a1'), '--format', 'html', '-o', fresh])).code).toBe(0)
    expect(statSync(fresh).size).toBeGreaterThan(0)
    expect((await cli(['export', join(root, 'a1'), '--format', 'md', '--force'])).code).toBe(2)
  })
})

describe('W12: a full disk prints as DISK_FULL', () => {
  it('W12: salvage onto a full tmpfs prints one DISK_FULL line naming the file, never raw ENOSPC text', async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'al-cli-w12-'))
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint])
    if (mounted.status !== 0) {
      console.log(`W12: skipped: mount -t tmpfs refused (${mounted.stderr.toString().trim()})`)
      rmSync(mountPoint, { recursive: true, force: true })
      return
    }
    try {
      const store = join(mountPoint, 'store')
      mkdirSync(store, { mode: 0o700 })
      await writeSession(testStore(store), 'src', { turns: 3 })
      const page = Buffer.alloc(4096, 0x61)
      for (let index = 0; ; index += 1) {
        try {
          writeFileSync(join(mountPoint, `fill-${index}`), page)
        } catch {
          break
        }
      }
      const run = await cli(['salvage', join(store, 'src'), '--to', 'copy'])
      expect(run.code).toBe(2)
      expect(run.stderr).toMatch(/^agent-ledger: DISK_FULL in /)
      expect(run.stderr).not.toMatch(/ENOSPC: ENOSPC/)
      expect(run.stderr.trim().split('\n')).toHaveLength(1)
      expect(existsSync(join(store, 'copy', 'session.v4.jsonl'))).toBe(false)
    } finally {
      spawnSync('umount', ['-l', mountPoint])
      rmSync(mountPoint, { recursive: true, force: true })
    }
  })
})
