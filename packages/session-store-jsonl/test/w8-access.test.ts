import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createJsonlStore } from '../src/index.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import { bundleChild, spawnChild } from './support/children.ts'
import { createFaultFs } from './support/fault-fs.ts'

const NOBODY = 65534
/** What a session directory holds at rest: the log and its lease file (no lock, no temp file). */
const SESSION_FILES = [LOG_FILE_NAME, 'writer.lease']
const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w8-'))
let bundle = ''
/** Why the unprivileged cases cannot run here, or null when they can. */
let skipReason: string | null = null

function probe(args: readonly string[]): Promise<Record<string, unknown>> {
  const child = spawnChild('setpriv', [
    `--reuid=${NOBODY}`,
    `--regid=${NOBODY}`,
    '--clear-groups',
    process.execPath,
    bundle,
    ...args,
  ])
  return child.waitForLine(() => true).then((line) => JSON.parse(line) as Record<string, unknown>)
}

/** A store root owned by `owner` (default: the unprivileged user), with one session (header + 2 events). */
async function ownedStore(
  name: string,
  owner = NOBODY,
): Promise<{ root: string; id: string; directory: string }> {
  const root = join(scratch, name)
  mkdirSync(root, { mode: 0o700 })
  const id = 'probe'
  const store = createJsonlStore({ root, jsonl: { lock: { heartbeatMs: 0 } } })
  const writer = await store.create({ id })
  writer.append({ type: 'turn/start', data: { turn: 1 } })
  writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'hello' } } })
  await writer.close()
  await store.close()
  // The lease file (the session's fencing epoch) is the session's too, beside the log.
  for (const path of [
    root,
    join(root, id),
    ...readdirSync(join(root, id)).map((name) => join(root, id, name)),
  ])
    chownSync(path, owner, owner)
  return { root, id, directory: join(root, id) }
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) {
    skipReason = 'not running as root, so setpriv cannot switch to uid 65534'
    return
  }
  const setpriv = spawnSync('setpriv', [
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    process.execPath,
    '-e',
    '0',
  ])
  if (setpriv.error !== undefined || setpriv.status !== 0) {
    skipReason = `setpriv cannot run node as uid 65534 (${setpriv.error?.message ?? `exit ${String(setpriv.status)}`})`
    return
  }
  bundle = await bundleChild('access-probe.ts')
  const readable = spawnSync('setpriv', [
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    process.execPath,
    bundle,
    scratch,
    'none',
    'x',
  ])
  if (readable.status !== 0) {
    skipReason = `uid 65534 cannot run the probe from this checkout (${readable.stderr.toString().slice(0, 200)})`
    return
  }
  // The scratch directory must be traversable by the unprivileged user.
  chmodSync(scratch, 0o755)
})

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W8: EACCES as an unprivileged user', () => {
  it('W8: the probe really runs as uid 65534 (or the suite says why it cannot)', async (context) => {
    if (skipReason !== null) {
      console.log(`W8 skipped: ${skipReason}`)
      context.skip()
    }
    const { root, id } = await ownedStore('identity')
    expect(await probe([root, 'openReader', id])).toEqual({ uid: NOBODY, ok: true, lastSeq: 1 })
    expect(await probe([root, 'openWriter', id])).toEqual({ uid: NOBODY, ok: true })
  })

  it('W8: a 0400 session file gives ACCESS_DENIED open-append, leaves no lock or temp file, and still opens read-only', async (context) => {
    if (skipReason !== null) context.skip()
    const { root, id, directory } = await ownedStore('file-0400')
    chmodSync(join(directory, LOG_FILE_NAME), 0o400)
    const before = readFileSync(join(directory, LOG_FILE_NAME))
    const result = await probe([root, 'openWriter', id])
    expect(result).toMatchObject({
      uid: NOBODY,
      ok: false,
      code: 'ACCESS_DENIED',
      // The backend's `op` names the file it opened (the JSONL store API said `open-append`).
      details: { op: `open probe/${LOG_FILE_NAME}`, cause: 'EACCES' },
    })
    expect(readdirSync(directory).sort()).toEqual(SESSION_FILES)
    expect(readFileSync(join(directory, LOG_FILE_NAME)).equals(before)).toBe(true)
    expect(await probe([root, 'openReader', id])).toEqual({ uid: NOBODY, ok: true, lastSeq: 1 })
  })

  it('W8: a 0500 session directory gives ACCESS_DENIED create-lock, creates nothing, and still opens read-only', async (context) => {
    if (skipReason !== null) context.skip()
    const { root, id, directory } = await ownedStore('dir-0500')
    chmodSync(directory, 0o500)
    const result = await probe([root, 'openWriter', id])
    expect(result).toMatchObject({
      uid: NOBODY,
      ok: false,
      code: 'ACCESS_DENIED',
      details: { op: 'create-lock', cause: 'EACCES' },
    })
    expect(readdirSync(directory).sort()).toEqual(SESSION_FILES)
    expect(await probe([root, 'openReader', id])).toEqual({ uid: NOBODY, ok: true, lastSeq: 1 })
  })

  it('W8: a 0000 store root gives ACCESS_DENIED for a new session and creates nothing', async (context) => {
    if (skipReason !== null) context.skip()
    const { root } = await ownedStore('root-0000')
    chmodSync(root, 0o000)
    const result = await probe([root, 'create', 'fresh'])
    console.log(JSON.stringify(result))
    expect(result).toMatchObject({ uid: NOBODY, ok: false, code: 'ACCESS_DENIED' })
    // The backend's `op` is what it was doing, naming the session (the JSONL store API said `mkdir`).
    expect((result['details'] as { op: string }).op).toBe('create the directory of session fresh')
    chmodSync(root, 0o700)
    expect(readdirSync(root).sort()).toEqual(['probe'])
  })

  it('W8(b): EROFS on opening the log for append gives ACCESS_DENIED, releases the lock and leaves no temp file', async () => {
    const { root, id, directory } = await ownedStore('erofs', process.getuid?.() ?? 0)
    const fs = createFaultFs()
    fs.addFault({
      op: 'open',
      errno: 'EROFS',
      mode: 'forever',
      writeOpensOnly: true,
      path: (path) => path.endsWith(`/${LOG_FILE_NAME}`),
    })
    const store = createJsonlStore({ root, fs, jsonl: { lock: { heartbeatMs: 0 } } })
    await expect(store.openWriter(id)).rejects.toMatchObject({
      code: 'ACCESS_DENIED',
      details: { op: `open probe/${LOG_FILE_NAME}`, cause: 'EROFS' },
    })
    expect(readdirSync(directory).sort()).toEqual(SESSION_FILES)
    await store.close()
    const readerStore = createJsonlStore({ root })
    const reader = await readerStore.openReader(id)
    expect(reader.lastSeq).toBe(1)
    await readerStore.close()
  })
})
