import { nodeFsOps } from '@agent-ledger/session-store-jsonl'
import type { FileHandleOps, FsOps } from '@agent-ledger/session-store-jsonl'

import type { SessionStore } from '@agent-ledger/session-store'

import { Output, statusLineIo } from './io.ts'
import type { CliIo, StatusIo } from './io.ts'
import { errorJson, formatErrorLine } from './report-error.ts'
import type { ErrorContext } from './report-error.ts'
import { openStore } from './open-store.ts'
import { storeEncryption } from './store-keys.ts'
import type { OpenStoreOptions, SessionTarget, StoreSpec } from './open-store.ts'
import { terminalSafe } from './terminal-text.ts'

/** What every command gets: the streams, buffered stdout, the working directory and shared helpers. */
export class CommandContext {
  /** The CLI's streams; a progress line drawn in place is ended before other output. */
  readonly io: StatusIo
  readonly out: Output
  readonly cwd: string
  /** False under `--no-progress`. */
  progressEnabled = true
  /** The store root of the command, once known (store errors name files relative to it). */
  root: string | null = null
  /** The environment (`AGENT_LEDGER_STORE`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** True while a command that writes runs (a PostgreSQL schema may then be migrated on open). */
  writes = false
  /** The command's `<session>`, once resolved (see `resolveTarget`). */
  target: SessionTarget | null = null
  readonly #stores = new Map<string, Promise<SessionStore>>()
  /** The stores' encryption option from the environment, once read (null: none). */
  #encryption: OpenStoreOptions['encryption'] | null = null
  /** The log whose reads are reported, and to whom (see {@link watchReads}). */
  #watch: { readonly path: string; readonly onRead: (bytesSoFar: number) => void } | null = null

  /** @param io - The CLI's streams and environment. */
  constructor(io: CliIo) {
    this.io = statusLineIo(io)
    this.out = new Output(this.io)
    this.cwd = io.cwd ?? process.cwd()
    this.env = io.env ?? process.env
  }

  /**
   * The store of a spec (a directory or a database), opened once per command and closed by
   * {@link closeStores}: the one way a command gets a store. Read-only commands refuse a
   * PostgreSQL schema that is not current (`SCHEMA_BEHIND`: run `agent-ledger db migrate`);
   * write commands apply pending migrations. A directory store's warnings go to stderr, and
   * reads of the log named by {@link watchReads} are reported for progress lines.
   *
   * @param spec - The store.
   * @returns The core store.
   */
  store(spec: StoreSpec): Promise<SessionStore> {
    const key = spec.kind === 'jsonl' ? `jsonl:${spec.root}` : `postgres:${spec.url}`
    if (spec.kind === 'jsonl') this.root = spec.root
    let opened = this.#stores.get(key)
    if (opened === undefined) {
      opened = openStore(spec, this.storeOptions({ fs: this.#watchedFs() }))
      this.#stores.set(key, opened)
    }
    return opened
  }

  /**
   * The options every store of this command is opened with (a caller opening its own store,
   * e.g. with another clock or registry, starts from these).
   *
   * @param extra - Options that replace the defaults.
   * @returns The options.
   */
  storeOptions(extra: Partial<OpenStoreOptions> = {}): OpenStoreOptions {
    this.#encryption ??= storeEncryption(this.env, this.cwd)
    return {
      clock: () => this.clock(),
      migrate: this.writes,
      onWarning: (warning) => this.notice('warning', warning.message),
      ...(this.#encryption === undefined ? {} : { encryption: this.#encryption }),
      ...extra,
    }
  }

  /**
   * Closes `store` with the others when the command ends.
   *
   * @param store - A store the command opened itself (with {@link storeOptions}).
   */
  adopt(store: SessionStore): void {
    this.#stores.set(`adopted:${this.#stores.size}`, Promise.resolve(store))
  }

  /**
   * Reports reads of `path` (bytes read so far) from now on, for progress lines.
   *
   * @param path - The log file (absolute).
   * @param onRead - Called with the furthest byte read.
   */
  watchReads(path: string, onRead: (bytesSoFar: number) => void): void {
    this.#watch = { path, onRead }
  }

  /** Closes every store {@link store} opened (their connection pools). Never throws. */
  async closeStores(): Promise<void> {
    const opened = [...this.#stores.values()]
    this.#stores.clear()
    await Promise.allSettled(opened.map(async (store) => (await store).close()))
  }

  /** The real file system, reporting reads of the watched log (if any) to its callback. */
  #watchedFs(): FsOps {
    return watchedFs(
      (path) => this.#watch?.path === path,
      (bytes) => this.#watch?.onRead(bytes),
    )
  }

  /** The wall clock of `io` (ISO-8601). */
  clock(): string {
    return this.io.clock?.() ?? new Date().toISOString()
  }

  /** Where store errors' files are rooted. */
  get errorContext(): ErrorContext {
    return { root: this.root, cwd: this.cwd }
  }

  /**
   * Prints one note or warning line on stderr (`agent-ledger: warning: ...`).
   *
   * @param kind - `note` or `warning`.
   * @param text - One sentence.
   */
  notice(kind: 'note' | 'warning', text: string): void {
    this.io.stderr(`agent-ledger: ${kind}: ${terminalSafe(text)}\n`)
  }

  /**
   * Reports an error: one line on stderr, and with `json` a `{"error": ...}` document on stdout.
   *
   * @param error - Anything thrown.
   * @param json - Whether the command was asked for machine output.
   */
  async reportError(error: unknown, json: boolean): Promise<void> {
    if (json) await this.out.write(`${stringifyJson({ error: errorJson(error, this.errorContext) })}\n`)
    await this.out.flush()
    this.io.stderr(formatErrorLine(error, this.errorContext))
  }
}

/** The real file system, reporting the furthest byte read through handles opened on a watched path. */
function watchedFs(watched: (path: string) => boolean, onRead: (bytesSoFar: number) => void): FsOps {
  return {
    ...nodeFsOps,
    async open(target, flags, mode) {
      const handle = await nodeFsOps.open(target, flags, mode)
      if (!watched(target)) return handle
      let furthest = 0
      const reported: FileHandleOps = {
        path: handle.path,
        async read(...args: Parameters<FileHandleOps['read']>) {
          const position = args[3]
          const count = await handle.read(...args)
          if (position + count > furthest) {
            furthest = position + count
            onRead(furthest)
          }
          return count
        },
        write: (buffer, position) => handle.write(buffer, position),
        datasync: () => handle.datasync(),
        sync: () => handle.sync(),
        truncate: (length) => handle.truncate(length),
        stat: () => handle.stat(),
        chmod: (fileMode) => handle.chmod(fileMode),
        close: () => handle.close(),
      }
      return reported
    },
  }
}

/**
 * `JSON.stringify` that never throws (a BigInt in error details becomes a string).
 *
 * @param value - JSON-like data.
 * @param indent - Optional indentation.
 * @returns The JSON text.
 */
export function stringifyJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item),
    indent,
  )
}
