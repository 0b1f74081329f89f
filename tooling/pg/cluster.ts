/**
 * Throwaway PostgreSQL clusters for tests, benchmarks and the demo.
 *
 * A cluster lives in a fresh directory under `os.tmpdir()`: `initdb` with trust
 * authentication for the test user only (`ledger`), `--no-sync` (initdb only: the server
 * itself keeps `fsync = on`), the Unix socket inside that directory and TCP on one loopback
 * port. It is stopped by signalling the pid written in its own `postmaster.pid`, never by
 * process name, so other PostgreSQL servers on the machine are never touched.
 *
 * Binaries: `AGENT_LEDGER_PG_BIN` when set, else the directory of `initdb` on `PATH`, else
 * the highest version under Debian's `/usr/lib/postgresql/<version>/bin`. When the process
 * runs as root the server runs as the `postgres` user (PostgreSQL refuses to run as root).
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { appendFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { promisify } from 'node:util'

import { testTime, waitUntil } from '../test-time.ts'

const run = promisify(execFile)

/** The database user every throwaway cluster trusts (and only this one). */
const TEST_USER = 'ledger'

/** Where Debian installs the server binaries, one directory per major version. */
const DEBIAN_ROOT = '/usr/lib/postgresql'

/** How a server is stopped: `fast` (SIGINT), `immediate` (SIGQUIT, crash-like) or `kill` (SIGKILL of the postmaster). */
export type StopMode = 'fast' | 'immediate' | 'kill'

const SIGNALS: Record<StopMode, NodeJS.Signals> = { fast: 'SIGINT', immediate: 'SIGQUIT', kill: 'SIGKILL' }

/**
 * Finds the directory holding `initdb`, `pg_ctl`, `postgres` and `pg_basebackup`.
 *
 * @returns The directory, or `undefined` with no PostgreSQL server binaries on this machine.
 */
function findPgBinDir(): string | undefined {
  const fromEnv = process.env.AGENT_LEDGER_PG_BIN
  if (fromEnv !== undefined && fromEnv !== '') return hasServerBinaries(fromEnv) ? fromEnv : undefined
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    // Distributions link a few binaries onto PATH (Debian: /usr/local/bin/initdb -> ...):
    // the real directory holds the rest (pg_basebackup).
    if (directory !== '' && hasServerBinaries(directory))
      return dirname(realpathSync(join(directory, 'initdb')))
  }
  let versions: string[] = []
  try {
    versions = readdirSync(DEBIAN_ROOT).filter((name) => /^\d+(\.\d+)?$/.test(name))
  } catch {
    return undefined
  }
  versions.sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const directory = join(DEBIAN_ROOT, version, 'bin')
    if (hasServerBinaries(directory)) return directory
  }
  return undefined
}

function hasServerBinaries(directory: string): boolean {
  return ['initdb', 'pg_ctl', 'postgres'].every((name) => existsSync(join(directory, name)))
}

/** Why PostgreSQL tests cannot run here, or `undefined` when they can. */
export function pgUnavailableReason(): string | undefined {
  if (findPgBinDir() !== undefined) return undefined
  return 'PostgreSQL server binaries not found (install Debian `postgresql`, put initdb on PATH or set AGENT_LEDGER_PG_BIN)'
}

interface RunAs {
  uid: number
  gid: number
}

async function serverAccount(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const { stdout: uid } = await run('id', ['-u', 'postgres'])
  const { stdout: gid } = await run('id', ['-g', 'postgres'])
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) }
}

/** A free TCP port on 127.0.0.1 (bound and released; the server binds it right after). */
async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** Options of {@link startCluster}. */
export interface StartClusterOptions {
  /** Extra `postgresql.conf` settings, e.g. `{ synchronous_commit: 'on' }`. */
  settings?: Readonly<Record<string, string>>
}

/** One throwaway server (a primary or a standby) in its own temporary directory. */
export class PgCluster {
  /** The temporary directory: `data/`, the socket and `server.log`. */
  readonly dir: string
  readonly dataDir: string
  readonly port: number
  readonly binDir: string
  private readonly account: RunAs | undefined

  constructor(init: {
    dir: string
    dataDir: string
    port: number
    binDir: string
    account: RunAs | undefined
  }) {
    this.dir = init.dir
    this.dataDir = init.dataDir
    this.port = init.port
    this.binDir = init.binDir
    this.account = init.account
  }

  /** `postgres://ledger@127.0.0.1:<port>/<database>` (trust auth, no password). */
  url(database = 'postgres'): string {
    return `postgres://${TEST_USER}@127.0.0.1:${this.port}/${database}`
  }

  /** The postmaster's pid from the first line of `postmaster.pid`, or `undefined` when the file is absent. */
  postmasterPid(): number | undefined {
    try {
      const first = readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]
      const pid = Number(first)
      return Number.isInteger(pid) && pid > 0 ? pid : undefined
    } catch {
      return undefined
    }
  }

  /** Runs one of the cluster's binaries as the server account. */
  async exec(binary: string, args: readonly string[]): Promise<string> {
    const path = join(this.binDir, binary)
    const { stdout } =
      this.account === undefined
        ? await run(path, [...args], { cwd: this.dir })
        : await run('runuser', ['-u', 'postgres', '--', path, ...args], { cwd: this.dir })
    return stdout
  }

  /** Starts the server and waits until it accepts connections. Retries while a killed predecessor's memory is still attached. */
  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`
    let lastError: unknown
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await this.exec('pg_ctl', [
          '-D',
          this.dataDir,
          '-l',
          join(this.dir, 'server.log'),
          '-w',
          '-t',
          String(Math.ceil(testTime(60_000) / 1000)),
          '-o',
          options,
          'start',
        ])
        return
      } catch (error) {
        lastError = error
        await sleep(250)
      }
    }
    throw new Error(`PostgreSQL did not start on port ${this.port}: ${String(lastError)}\n${this.logTail()}`)
  }

  /**
   * Stops the server by the pid in its `postmaster.pid` and waits until that process is gone.
   *
   * @param mode - `fast` (clean shutdown), `immediate` (no checkpoint, crash recovery on the
   *   next start) or `kill` (SIGKILL of the postmaster; its backends exit on their own).
   */
  async stop(mode: StopMode = 'fast'): Promise<void> {
    const pid = this.postmasterPid()
    if (pid === undefined || !isAlive(pid)) return
    process.kill(pid, SIGNALS[mode])
    await waitUntil(`postmaster ${pid} to exit after ${SIGNALS[mode]}`, () => !isAlive(pid), {
      timeoutMs: 60_000,
      pollMs: 50,
    })
  }

  /** The last lines of the server log, for error messages. */
  logTail(lines = 20): string {
    try {
      return readFileSync(join(this.dir, 'server.log'), 'utf8').split('\n').slice(-lines).join('\n')
    } catch {
      return '(no server log)'
    }
  }

  /** Stops the server (fast) and removes its directory. */
  async destroy(): Promise<void> {
    try {
      await this.stop('fast')
    } catch {
      await this.stop('kill')
    }
    rmSync(this.dir, { recursive: true, force: true })
  }

  /**
   * Makes a streaming standby of this (running) server with `pg_basebackup`, named
   * `applicationName` in `primary_conninfo`, started on a free port.
   */
  async createStandby(applicationName: string): Promise<PgCluster> {
    const standby = await allocate(this.binDir, this.account)
    await this.exec('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      TEST_USER,
      '-D',
      standby.dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ])
    await appendFile(
      join(standby.dataDir, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${this.port} user=${TEST_USER} application_name=${applicationName}'\n`,
    )
    await standby.start()
    return standby
  }

  /** Promotes a standby to primary and waits until it accepts writes. */
  async promote(): Promise<void> {
    await this.exec('pg_ctl', ['-D', this.dataDir, '-w', '-t', '60', 'promote'])
  }
}

async function allocate(binDir: string, account: RunAs | undefined): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-ledger-pg-'))
  if (account !== undefined) chownSync(dir, account.uid, account.gid)
  return new PgCluster({ dir, dataDir: join(dir, 'data'), port: await freePort(), binDir, account })
}

/**
 * Creates and starts a throwaway cluster: initdb (trust for {@link TEST_USER} only, UTF-8,
 * `--no-sync`), loopback TCP on a free port, socket in the temporary directory.
 *
 * @throws Error when the binaries are missing ({@link pgUnavailableReason}) or the server does not start.
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<PgCluster> {
  const binDir = findPgBinDir()
  if (binDir === undefined) throw new Error(pgUnavailableReason())
  const cluster = await allocate(binDir, await serverAccount())
  await initCluster(cluster, options)
  await cluster.start()
  return cluster
}

/**
 * A cluster kept between runs under `os.tmpdir()/agent-ledger-pg-cache-<key>` (a benchmark's
 * corpus that takes minutes to write): built once by `build` on a fresh cluster in a
 * temporary sibling directory, stopped, marked complete (`complete.json` holds what `build`
 * returned) and renamed into place; later calls start the server on the kept data directory
 * (a free port). The caller stops it with `stop()` (never `destroy()`, which removes it).
 * One run at a time: a server still running on the directory is an error, never stopped.
 *
 * @param key - What the cache is keyed by (corpus size, schema version...): a hex digest is the name.
 * @param build - Fills the running cluster; returns a JSON-serializable description.
 * @param options - The settings of a cluster built now (part of the key: say them in it).
 * @returns The running cluster, the description and whether it was built now.
 */
export async function cachedCluster<TInfo>(
  key: Readonly<Record<string, unknown>>,
  build: (cluster: PgCluster) => Promise<TInfo>,
  options: StartClusterOptions = {},
): Promise<{ cluster: PgCluster; info: TInfo; built: boolean }> {
  const binDir = findPgBinDir()
  if (binDir === undefined) throw new Error(pgUnavailableReason())
  const account = await serverAccount()
  const digest = createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 16)
  const dir = join(tmpdir(), `agent-ledger-pg-cache-${digest}`)
  const marker = join(dir, 'complete.json')
  let built = false
  if (!existsSync(marker)) {
    rmSync(dir, { recursive: true, force: true })
    const building = `${dir}.building-${process.pid}`
    rmSync(building, { recursive: true, force: true })
    mkdirSync(building, { mode: 0o700 })
    if (account !== undefined) chownSync(building, account.uid, account.gid)
    const fresh = new PgCluster({
      dir: building,
      dataDir: join(building, 'data'),
      port: await freePort(),
      binDir,
      account,
    })
    try {
      await initCluster(fresh, options)
      await fresh.start()
      const info = await build(fresh)
      await fresh.stop('fast')
      writeFileSync(join(building, 'complete.json'), `${JSON.stringify({ key, info })}\n`)
      renameSync(building, dir)
      built = true
    } catch (error) {
      await fresh.stop('fast').catch(() => undefined)
      rmSync(building, { recursive: true, force: true })
      throw error
    }
  }
  const { info } = JSON.parse(readFileSync(marker, 'utf8')) as { info: TInfo }
  const cluster = new PgCluster({ dir, dataDir: join(dir, 'data'), port: await freePort(), binDir, account })
  const running = cluster.postmasterPid()
  if (running !== undefined && isAlive(running)) {
    throw new Error(`the cached cluster ${dir} is in use by postmaster ${running}: one run at a time`)
  }
  await cluster.start()
  return { cluster, info, built }
}

async function initCluster(cluster: PgCluster, options: StartClusterOptions): Promise<void> {
  await cluster.exec('initdb', [
    '-D',
    cluster.dataDir,
    '-U',
    TEST_USER,
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
    '--no-instructions',
  ])
  writeFileSync(
    join(cluster.dataDir, 'pg_hba.conf'),
    [
      `local all ${TEST_USER} trust`,
      `host all ${TEST_USER} 127.0.0.1/32 trust`,
      `host replication ${TEST_USER} 127.0.0.1/32 trust`,
      '',
    ].join('\n'),
  )
  const settings: Record<string, string> = {
    shared_buffers: "'32MB'",
    max_connections: '60',
    max_wal_senders: '4',
    ...options.settings,
  }
  await appendFile(
    join(cluster.dataDir, 'postgresql.conf'),
    Object.entries(settings)
      .map(([key, value]) => `${key} = ${value}\n`)
      .join(''),
  )
}
