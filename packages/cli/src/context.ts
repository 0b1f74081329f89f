import { createSessionStore, nodeFsOps } from '@agent-ledger/session-store-jsonl'
import type { FileHandleOps, FsOps, SessionStore, StoreLogger } from '@agent-ledger/session-store-jsonl'

import type { SessionStore as CoreStore } from '@agent-ledger/session-store'

import { Output, statusLineIo } from './io.ts'
import type { CliIo, StatusIo } from './io.ts'
import { errorJson, formatErrorLine } from './report-error.ts'
import type { ErrorContext } from './report-error.ts'
import { coreStore, openBackend } from './open-store.ts'
import type { SessionTarget, StoreSpec } from './open-store.ts'
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
  readonly #databases = new Map<string, Promise<CoreStore>>()

  /** @param io - The CLI's streams and environment. */
  constructor(io: CliIo) {
    this.io = statusLineIo(io)
    this.out = new Output(this.io)
    this.cwd = io.cwd ?? process.cwd()
    this.env = io.env ?? process.env
  }

  /**
   * The core store over a database store, opened once per command and closed by {@link closeStores}.
   * Read-only commands refuse a schema that is not current (`SCHEMA_BEHIND`: run `agent-ledger db
   * migrate`); write commands apply pending migrations.
   *
   * @param spec - The store.
   * @returns The core store.
   */
  database(spec: StoreSpec): Promise<CoreStore> {
    const key = spec.kind === 'jsonl' ? spec.root : spec.url
    let opened = this.#databases.get(key)
    if (opened === undefined) {
      opened = openBackend(spec, { migrate: this.writes }).then((backend) =>
        coreStore(backend, () => this.clock()),
      )
      this.#databases.set(key, opened)
    }
    return opened
  }

  /**
   * Closes `store` with the others when the command ends.
   *
   * @param store - A core store the command opened itself.
   */
  adopt(store: CoreStore): void {
    this.#databases.set(`adopted:${this.#databases.size}`, Promise.resolve(store))
  }

  /** Closes every store {@link database} opened (their connection pools). Never throws. */
  async closeStores(): Promise<void> {
    const opened = [...this.#databases.values()]
    this.#databases.clear()
    await Promise.allSettled(opened.map(async (store) => (await store).close()))
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

  /**
   * Opens a store over `root` whose warnings go to stderr as one line each. With
   * `onRead`, reads of `watchedPath` are reported (bytes read so far), for progress lines.
   *
   * @param root - The store root (absolute).
   * @param watch - Optional: the log path to watch and the callback.
   * @returns The store.
   */
  store(
    root: string,
    watch?: { readonly path: string; readonly onRead: (bytesSoFar: number) => void },
  ): SessionStore {
    this.root = root
    const logger: StoreLogger = {
      warn: (message) => this.notice('warning', message),
    }
    const fs: FsOps = watch === undefined ? nodeFsOps : watchedFs(watch.path, watch.onRead)
    // An inspection tool reads every log in full: projection checkpoints (a cache the store
    // may use to skip the prefix on open) are turned off, so damage anywhere is reported and
    // what is shown is the replay of the bytes on disk. (A variable, not a literal: store
    // builds without the option ignore it.)
    const options = { root, logger, fs, checkpoint: { enabled: false } }
    return createSessionStore(options)
  }
}

/** The real file system, reporting the furthest byte read through handles opened on `path`. */
function watchedFs(path: string, onRead: (bytesSoFar: number) => void): FsOps {
  return {
    ...nodeFsOps,
    async open(target, flags, mode) {
      const handle = await nodeFsOps.open(target, flags, mode)
      if (target !== path) return handle
      let furthest = 0
      const watched: FileHandleOps = {
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
      return watched
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
