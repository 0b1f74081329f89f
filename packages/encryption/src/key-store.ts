/**
 * Key stores: where each session's wrapped data key lives, outside the log (so a copy of the
 * log is no copy of its key, and deleting the record erases every copy's content).
 */
import { randomBytes } from 'node:crypto'
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

/** One wrapped data key. */
export interface DataKeyRecord {
  readonly dataKeyId: string
  /** The session it was made for (informational: the line AAD binds the session id). */
  readonly sessionId: string
  /** The provider key it is wrapped under now (a rekey changes it). */
  readonly keyId: string
  /** The wrapped key, as the provider returned it. */
  readonly wrapped: string
  readonly createdAt: string
}

/** Where wrapped data keys live. */
export interface KeyStore {
  get(dataKeyId: string): Promise<DataKeyRecord | null>
  /** Stores (or replaces, for a rekey) a record durably. */
  put(record: DataKeyRecord): Promise<void>
  /** Deletes a record durably; false when there was none. */
  delete(dataKeyId: string): Promise<boolean>
  list(): AsyncIterable<DataKeyRecord>
}

const DATA_KEY_ID = /^dk-[0-9a-f]{32}$/

function checkedId(dataKeyId: string): string {
  if (!DATA_KEY_ID.test(dataKeyId)) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      message: `Invalid data key id ${JSON.stringify(dataKeyId).slice(0, 80)}: expected dk- and 32 hex digits.`,
      details: { option: 'dataKeyId' },
    })
  }
  return dataKeyId
}

/** A key store in memory (tests, a process that keeps nothing). */
export function memoryKeyStore(): KeyStore {
  const records = new Map<string, DataKeyRecord>()
  return {
    get: (id) => Promise.resolve(records.get(id) ?? null),
    put: (record) => {
      records.set(checkedId(record.dataKeyId), { ...record })
      return Promise.resolve()
    },
    delete: (id) => Promise.resolve(records.delete(id)),
    // eslint-disable-next-line @typescript-eslint/require-await -- an async iterable over a snapshot
    list: async function* () {
      yield* [...records.values()]
    },
  }
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * A key store in a directory: one `<dataKeyId>.json` file (mode 0600) per data key, written to
 * a temp file, fsynced and renamed; deleted with the directory fsynced. Back this directory up
 * apart from the logs (FORMAT.md section 17): without it, encrypted sessions cannot be read.
 *
 * @param dir - The directory (made when missing, mode 0700).
 * @returns The key store.
 */
export function fileKeyStore(dir: string): KeyStore {
  const fileOf = (id: string): string => join(dir, `${checkedId(id)}.json`)
  const read = (file: string): DataKeyRecord | null => {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    return JSON.parse(text) as DataKeyRecord
  }
  return {
    get: (id) => Promise.resolve(read(fileOf(id))),
    put: (record) => {
      const file = fileOf(record.dataKeyId)
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const temp = join(dir, `.${record.dataKeyId}.${randomBytes(4).toString('hex')}.tmp`)
      const fd = openSync(temp, 'wx', 0o600)
      try {
        writeSync(fd, `${JSON.stringify(record)}\n`)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(temp, file)
      fsyncDir(dir)
      return Promise.resolve()
    },
    delete: (id) => {
      const file = fileOf(id)
      const existed = read(file) !== null
      rmSync(file, { force: true })
      if (existed) fsyncDir(dir)
      return Promise.resolve(existed)
    },
    list: async function* () {
      let names: string[]
      try {
        names = readdirSync(dir)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
        throw error
      }
      for (const name of names.sort()) {
        if (!name.endsWith('.json') || !DATA_KEY_ID.test(name.slice(0, -5))) continue
        const record = read(join(dir, name))
        if (record !== null) yield await Promise.resolve(record)
      }
    },
  }
}
