import { constants, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import {
  createFaultFs,
  createPowerLossRecorder,
  damagedContent,
  readTree,
  seededRandom,
} from './support/fault-fs.ts'
import type { Damage, PowerLossRecorder } from './support/fault-fs.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-faultfs-'))
let counter = 0

function fresh(): string {
  counter += 1
  const directory = join(scratch, `d${counter}`)
  mkdirSync(directory, { mode: 0o700 })
  return directory
}

const CREATE = constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

async function image(
  recorder: PowerLossRecorder,
  opIndex: number,
  options: { damage: Damage; seed?: number; names?: 'durable' | 'current' },
): Promise<Map<string, Buffer | 'dir'>> {
  const target = fresh()
  await recorder.materialise(opIndex, { seed: options.seed ?? 1, ...options }, target)
  return readTree(target)
}

function text(tree: Map<string, Buffer | 'dir'>, name: string): string | undefined {
  const value = tree.get(name)
  return value === undefined || value === 'dir' ? undefined : value.toString('utf8')
}

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('createFaultFs', () => {
  it('fails the Nth matching call once with the given errno, shaped like a node:fs error', async () => {
    const directory = fresh()
    const fs = createFaultFs()
    const fault = fs.addFault({ op: 'datasync', errno: 'EIO', nth: 2 })
    const handle = await fs.open(join(directory, 'a'), CREATE, 0o600)
    await handle.write(Buffer.from('x'), 0)
    await handle.datasync()
    await expect(handle.datasync()).rejects.toMatchObject({ code: 'EIO', syscall: 'datasync', errno: -5 })
    await handle.datasync()
    expect(fault.fired).toBe(1)
    await handle.close()
    expect(fs.count('datasync')).toBe(3)
  })

  it('fails forever from the Nth call until removed, filtered by path', async () => {
    const directory = fresh()
    const fs = createFaultFs()
    const fault = fs.addFault({
      op: 'write',
      errno: 'ENOSPC',
      mode: 'forever',
      path: (path) => path.endsWith('b'),
    })
    const a = await fs.open(join(directory, 'a'), CREATE, 0o600)
    const b = await fs.open(join(directory, 'b'), CREATE, 0o600)
    await a.write(Buffer.from('ok'), 0)
    await expect(b.write(Buffer.from('no'), 0)).rejects.toMatchObject({ code: 'ENOSPC' })
    await expect(b.write(Buffer.from('no'), 0)).rejects.toMatchObject({ code: 'ENOSPC' })
    fault.remove()
    await b.write(Buffer.from('ok'), 0)
    await a.close()
    await b.close()
    expect(fault.fired).toBe(2)
    expect(readFileSync(join(directory, 'b'), 'utf8')).toBe('ok')
  })

  it('does a short write before failing, like a disk filling up mid-write', async () => {
    const directory = fresh()
    const fs = createFaultFs()
    fs.addFault({ op: 'write', errno: 'EFBIG', shortWriteBytes: 3 })
    const handle = await fs.open(join(directory, 'a'), CREATE, 0o600)
    await expect(handle.write(Buffer.from('abcdef'), 0)).rejects.toMatchObject({ code: 'EFBIG' })
    await handle.close()
    expect(readFileSync(join(directory, 'a'), 'utf8')).toBe('abc')
  })

  it('W10: delays every handle write by writeDelayMs before it reaches the disk', async () => {
    const directory = fresh()
    const fs = createFaultFs()
    fs.writeDelayMs = 50
    const handle = await fs.open(join(directory, 'slow'), CREATE, 0o600)
    const pending = handle.write(Buffer.from('late'), 0)
    await new Promise((resolve) => setImmediate(resolve))
    expect(readFileSync(join(directory, 'slow'), 'utf8')).toBe('')
    await pending
    expect(readFileSync(join(directory, 'slow'), 'utf8')).toBe('late')
    await handle.close()
  })

  it('injects EXDEV on link and EROFS on open without touching the disk', async () => {
    const directory = fresh()
    const fs = createFaultFs()
    fs.addFault({ op: 'open', errno: 'EROFS' })
    fs.addFault({ op: 'link', errno: 'EXDEV' })
    await expect(fs.open(join(directory, 'a'), CREATE, 0o600)).rejects.toMatchObject({ code: 'EROFS' })
    expect(() => statSync(join(directory, 'a'))).toThrow()
    writeFileSync(join(directory, 'src'), 'x')
    await expect(fs.link(join(directory, 'src'), join(directory, 'dst'))).rejects.toMatchObject({
      code: 'EXDEV',
    })
    expect(() => statSync(join(directory, 'dst'))).toThrow()
  })
})

describe('createPowerLossRecorder', () => {
  it('keeps only fdatasynced bytes with damage "drop", and everything with "as-written"', async () => {
    const root = fresh()
    writeFileSync(join(root, 'log'), 'old\n')
    const recorder = await createPowerLossRecorder(root)
    const handle = await recorder.open(join(root, 'log'), constants.O_RDWR | constants.O_NOFOLLOW)
    await handle.write(Buffer.from('synced\n'), 4)
    await handle.datasync()
    await handle.write(Buffer.from('pending\n'), 11)
    await handle.close()
    expect(recorder.opCount).toBe(3)
    expect(text(await image(recorder, 3, { damage: 'drop' }), 'log')).toBe('old\nsynced\n')
    expect(text(await image(recorder, 3, { damage: 'as-written' }), 'log')).toBe('old\nsynced\npending\n')
    // Before the fdatasync (op index 1: only the write happened), "drop" keeps the pre-existing state.
    expect(text(await image(recorder, 1, { damage: 'drop' }), 'log')).toBe('old\n')
    expect(text(await image(recorder, 0, { damage: 'as-written' }), 'log')).toBe('old\n')
  })

  it('"cut" keeps the durable prefix plus a seeded prefix of the unsynced tail; "garble" and "holes" keep the durable prefix intact', () => {
    const durable = Buffer.from('a'.repeat(100))
    const current = Buffer.concat([durable, Buffer.from('b'.repeat(3000))])
    const lengths = new Set<number>()
    let dataAfterHole = 0
    for (let seed = 0; seed < 20; seed += 1) {
      const random = seededRandom(seed)
      const cut = damagedContent({ durable, current }, 'cut', random)
      expect(cut.subarray(0, 100).equals(durable)).toBe(true)
      expect(current.subarray(0, cut.length).equals(cut)).toBe(true)
      lengths.add(cut.length)
      for (const damage of ['garble', 'holes'] as const) {
        const garbled = damagedContent({ durable, current }, damage, random)
        expect(garbled.subarray(0, 100).equals(durable)).toBe(true)
        expect(garbled.length).toBeLessThanOrEqual(current.length)
      }
      // garble: real data, then only zeros or garbage; holes: real data may follow a bad block.
      const garbled = damagedContent({ durable, current }, 'garble', random)
      const firstBad = garbled.findIndex((byte, index) => byte !== current[index])
      if (firstBad >= 0) {
        const rest = garbled.subarray(firstBad)
        expect(rest.filter((byte) => byte === 0x62).length).toBeLessThan(Math.max(8, rest.length / 20))
      }
      const holed = damagedContent({ durable, current }, 'holes', random)
      const firstHole = holed.findIndex((byte, index) => byte !== current[index])
      if (firstHole >= 0 && holed.subarray(firstHole).includes(Buffer.from('b'.repeat(64))))
        dataAfterHole += 1
    }
    expect(dataAfterHole).toBeGreaterThan(0)
    expect(lengths.size).toBeGreaterThan(5)
  })

  it('is deterministic for a seed and differs between seeds', async () => {
    const root = fresh()
    const recorder = await createPowerLossRecorder(root)
    const handle = await recorder.open(join(root, 'f'), CREATE, 0o600)
    await handle.datasync()
    await recorder.fsyncDirectory(root)
    await handle.write(Buffer.alloc(8192, 0x41), 0)
    await handle.close()
    const one = await image(recorder, recorder.opCount, { damage: 'garble', seed: 7 })
    const again = await image(recorder, recorder.opCount, { damage: 'garble', seed: 7 })
    const other = await image(recorder, recorder.opCount, { damage: 'garble', seed: 8 })
    expect(one.get('f')).toEqual(again.get('f'))
    expect(one.get('f')).not.toEqual(other.get('f'))
  })

  it('reverts names that were not dir-synced: a created or linked name disappears, an unlinked one reappears', async () => {
    const root = fresh()
    writeFileSync(join(root, 'gone'), 'still here')
    const recorder = await createPowerLossRecorder(root)
    const temp = await recorder.open(join(root, '.tmp'), CREATE, 0o600)
    await temp.write(Buffer.from('header\n'), 0)
    await temp.sync()
    await temp.close()
    await recorder.link(join(root, '.tmp'), join(root, 'session'))
    await recorder.unlink(join(root, 'gone'))
    const beforeDirSync = recorder.opCount
    expect(await image(recorder, beforeDirSync, { damage: 'drop' })).toEqual(
      new Map([['gone', Buffer.from('still here')]]),
    )
    // Without damage to names (a process crash), the live namespace is what remains.
    expect(
      [...(await image(recorder, beforeDirSync, { damage: 'as-written', names: 'current' })).keys()].sort(),
    ).toEqual(['.tmp', 'session'])
    await recorder.fsyncDirectory(root)
    const afterDirSync = await image(recorder, recorder.opCount, { damage: 'drop' })
    expect([...afterDirSync.keys()].sort()).toEqual(['.tmp', 'session'])
    expect(text(afterDirSync, 'session')).toBe('header\n')
    // Both names are the same inode in the image (nlink 2), as on the real disk.
    const target = fresh()
    await recorder.materialise(recorder.opCount, { damage: 'drop', seed: 0 }, target)
    expect(statSync(join(target, 'session')).nlink).toBe(2)
    expect(statSync(join(target, 'session')).ino).toBe(statSync(join(target, '.tmp')).ino)
  })

  it('a file data-synced under a name that was never dir-synced is lost with its name', async () => {
    const root = fresh()
    const recorder = await createPowerLossRecorder(root)
    await recorder.mkdir(join(root, 'sub'), 0o700)
    const handle = await recorder.open(join(root, 'sub', 'f'), CREATE, 0o600)
    await handle.write(Buffer.from('data'), 0)
    await handle.datasync()
    await handle.close()
    await recorder.fsyncDirectory(join(root, 'sub'))
    // sub's own entry in root was never made durable: the whole subtree is gone.
    expect((await image(recorder, recorder.opCount, { damage: 'drop' })).size).toBe(0)
    await recorder.fsyncDirectory(root)
    expect(text(await image(recorder, recorder.opCount, { damage: 'drop' }), 'sub/f')).toBe('data')
  })

  it('models rename and unsynced truncation', async () => {
    const root = fresh()
    writeFileSync(join(root, 'a'), '0123456789')
    const recorder = await createPowerLossRecorder(root)
    const handle = await recorder.open(join(root, 'a'), constants.O_RDWR)
    await handle.truncate(4)
    const truncated = recorder.opCount
    await handle.datasync()
    await handle.close()
    await recorder.rename(join(root, 'a'), join(root, 'b'))
    expect(text(await image(recorder, truncated, { damage: 'drop' }), 'a')).toBe('0123456789')
    const outcomes = new Set<string | undefined>()
    for (let seed = 0; seed < 16; seed += 1)
      outcomes.add(text(await image(recorder, truncated, { damage: 'cut', seed }), 'a'))
    expect(outcomes).toEqual(new Set(['0123', '0123456789']))
    // The rename was never dir-synced: the old name holds the (synced) truncated data.
    expect(await image(recorder, recorder.opCount, { damage: 'drop' })).toEqual(
      new Map([['a', Buffer.from('0123')]]),
    )
    await recorder.fsyncDirectory(root)
    expect(await image(recorder, recorder.opCount, { damage: 'drop' })).toEqual(
      new Map([['b', Buffer.from('0123')]]),
    )
  })

  it('its "as-written, current names" image equals the real directory after a mixed workload', async () => {
    const root = fresh()
    writeFileSync(join(root, 'pre'), 'pre')
    const recorder = await createPowerLossRecorder(root)
    await recorder.mkdir(join(root, 's'), 0o700)
    const handle = await recorder.open(join(root, 's', 'log'), CREATE, 0o600)
    let offset = 0
    for (let index = 0; index < 20; index += 1) {
      const line = Buffer.from(`line ${index}\n`)
      await handle.write(line, offset)
      offset += line.length
      if (index % 3 === 0) await handle.datasync()
    }
    await handle.truncate(offset - 8)
    await handle.close()
    await recorder.link(join(root, 's', 'log'), join(root, 's', 'copy'))
    await recorder.unlink(join(root, 'pre'))
    await recorder.rename(join(root, 's', 'copy'), join(root, 's', 'moved'))
    const appended = await recorder.open(join(root, 's', 'moved'), constants.O_WRONLY | constants.O_APPEND)
    await appended.write(Buffer.from('tail\n'), 0)
    await appended.close()
    // Calls outside the root pass through and are not recorded.
    const outside = fresh()
    const before = recorder.opCount
    await recorder.mkdir(join(outside, 'x'), 0o700)
    expect(recorder.opCount).toBe(before)
    expect(await image(recorder, recorder.opCount, { damage: 'as-written', names: 'current' })).toEqual(
      await readTree(root),
    )
    await nodeFsOps.lstat(root)
  })
})
