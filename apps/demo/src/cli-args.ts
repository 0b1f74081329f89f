import path from 'node:path'
import { parseArgs } from 'node:util'

import { isCrashPoint } from './agent.ts'
import type { CrashPoint } from './agent.ts'
import type { StoreLocation } from './store.ts'
import { MiniAgentError } from './mini-agent-error.ts'

/** The providers `--provider` accepts. */
export type ProviderName = 'scripted' | 'openai'

/** A test-only `--crash-at <point>[:<tool>]`. */
export interface CrashSpec {
  readonly point: CrashPoint
  readonly tool?: string
}

/** Options shared by the commands that run turns. */
export interface TurnFlags {
  /** The JSONL root (the default one when the store is a database: the tools never touch it). */
  readonly root: string
  /** Where the sessions are: `--root`/`--store` directory, or a `--store` PostgreSQL URL. */
  readonly store: StoreLocation
  /** PostgreSQL writer lease in ms (`--lease-ms`; default 30 000). */
  readonly leaseMs?: number
  readonly workspace?: string
  readonly provider?: ProviderName
  readonly maxSteps?: number
  readonly crashAt?: CrashSpec
}

/** A parsed command line. */
export type Command =
  | ({
      readonly kind: 'run'
      readonly prompt: string
      readonly id?: string
      readonly compress: boolean
    } & TurnFlags)
  | ({
      readonly kind: 'resume'
      readonly id: string
      readonly prompt?: string
      readonly takeover: boolean
    } & TurnFlags)
  | { readonly kind: 'sessions'; readonly root: string; readonly store: StoreLocation }
  | { readonly kind: 'demo'; readonly keep: boolean; readonly store: StoreLocation | null }
  | { readonly kind: 'help' }

/** The usage text printed by `mini-agent --help` and after a usage error. */
export const USAGE = `mini-agent: a small coding agent whose history lives in an agent-ledger session log.

Usage:
  mini-agent run [--root DIR | --store URL|DIR] [--workspace DIR] [--provider scripted|openai] [--id ID] [--compress] "<prompt>"
  mini-agent resume <id> [--root DIR | --store URL|DIR] [--takeover] [--workspace DIR] [--provider scripted|openai] ["<prompt>"]
  mini-agent sessions [--root DIR | --store URL|DIR]
  mini-agent demo [--keep] [--store URL]

Options:
  --root DIR        session root (default: .mini-agent/sessions under the current directory)
  --store URL|DIR   where sessions live: a directory (as --root) or a postgres:// URL
                    (default: $AGENT_LEDGER_STORE, else --root's default); the password is never printed
  --takeover        resume on PostgreSQL: take the writer lease even if it has not expired (the
                    holder died; it is fenced and can write nothing more)
  --lease-ms N      PostgreSQL writer lease in milliseconds (default 30000)
  --workspace DIR   the directory the tools may touch (run: .mini-agent/workspace under the
                    current directory, created if missing; resume: the session's)
  --provider NAME   scripted (built-in, offline; default) or openai (OPENAI_BASE_URL, OPENAI_API_KEY, MODEL)
  --id ID           session id for run (default: generated from the time)
  --max-steps N     model requests per turn before it ends as max-tokens (default 12)
  --compress        run: write session.v4.jsonl.zstd (one zstd frame per flush), resealed into large
                    frames when the run ends; resume keeps a session's encoding
  --crash-at P[:T]  test only: SIGKILL this process at point P (after-assistant, after-tool-call,
                    after-tool-run), optionally only for tool T
  --keep            demo: keep the temporary directory and say where it is (it is kept anyway)

Exit codes: 0 done, 1 error, 2 usage, 3 turn ended at max-tokens/max-steps, 130 aborted (Ctrl+C).`

function usage(message: string): MiniAgentError {
  return new MiniAgentError({ code: 'USAGE', message })
}

function parseCrash(value: string): CrashSpec {
  const [point = '', tool] = value.split(':', 2)
  if (!isCrashPoint(point)) {
    throw usage(
      `--crash-at is ${JSON.stringify(value)}; expected after-assistant, after-tool-call or after-tool-run, optionally followed by :<tool>.`,
    )
  }
  return tool === undefined || tool === '' ? { point } : { point, tool }
}

function parseProvider(value: string | undefined): ProviderName | undefined {
  if (value === undefined) return undefined
  if (value === 'scripted' || value === 'openai') return value
  throw usage(`--provider is ${JSON.stringify(value)}; expected scripted or openai.`)
}

function parseSteps(value: string | undefined, option = '--max-steps'): number | undefined {
  if (value === undefined) return undefined
  const steps = Number(value)
  if (!Number.isInteger(steps) || steps < 1)
    throw usage(`${option} is ${JSON.stringify(value)}; expected a positive integer.`)
  return steps
}

/** A `--store` value: a `postgres://`/`postgresql://` URL, or a directory (a JSONL root). */
function parseStore(value: string, cwd: string): StoreLocation {
  if (/^postgres(?:ql)?:\/\//i.test(value)) return { kind: 'postgres', url: value }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]
  if (scheme !== undefined)
    throw usage(`--store is a ${scheme}:// URL; expected a directory or a postgres:// URL.`)
  return { kind: 'jsonl', root: path.resolve(cwd, value) }
}

/**
 * Parses mini-agent's command line.
 *
 * @param argv - The arguments after the script name (`process.argv.slice(2)`).
 * @param cwd - The working directory the default root and relative paths resolve against.
 * @param env - The environment (`AGENT_LEDGER_STORE` when neither `--store` nor `--root` is given).
 * @returns The command; no argument at all means `demo`.
 * @throws {@link MiniAgentError} `USAGE` naming what is wrong.
 */
export function parseCommandLine(
  argv: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string | undefined>> = {},
): Command {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        root: { type: 'string' },
        store: { type: 'string' },
        takeover: { type: 'boolean', default: false },
        'lease-ms': { type: 'string' },
        workspace: { type: 'string' },
        provider: { type: 'string' },
        id: { type: 'string' },
        'max-steps': { type: 'string' },
        compress: { type: 'boolean', default: false },
        'crash-at': { type: 'string' },
        keep: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    })
  } catch (error) {
    throw usage(error instanceof Error ? error.message : String(error))
  }
  const { values, positionals } = parsed
  if (values.help) return { kind: 'help' }
  const [command = 'demo', ...rest] = positionals
  if (values.root !== undefined && values.store !== undefined) {
    throw usage('--root and --store both name the session store; give one.')
  }
  const named = values.store ?? (values.root === undefined ? env.AGENT_LEDGER_STORE : undefined)
  const chosen = named === undefined || named === '' ? null : parseStore(named, cwd)
  const root =
    chosen?.kind === 'jsonl'
      ? chosen.root
      : path.resolve(cwd, values.root ?? path.join('.mini-agent', 'sessions'))
  const store: StoreLocation = chosen ?? { kind: 'jsonl', root }
  const provider = parseProvider(values.provider)
  const maxSteps = parseSteps(values['max-steps'])
  const leaseMs = parseSteps(values['lease-ms'], '--lease-ms')
  const flags: TurnFlags = {
    root,
    store,
    ...(leaseMs === undefined ? {} : { leaseMs }),
    ...(values.workspace === undefined ? {} : { workspace: path.resolve(cwd, values.workspace) }),
    ...(provider === undefined ? {} : { provider }),
    ...(maxSteps === undefined ? {} : { maxSteps }),
    ...(values['crash-at'] === undefined ? {} : { crashAt: parseCrash(values['crash-at']) }),
  }
  switch (command) {
    case 'run': {
      if (rest.length !== 1 || rest[0]!.trim() === '') throw usage('run takes exactly one prompt argument.')
      if (values.compress && store.kind === 'postgres')
        throw usage('--compress writes a zstd log file; a PostgreSQL store has none (leave out --compress).')
      return {
        kind: 'run',
        prompt: rest[0]!,
        compress: values.compress,
        ...(values.id === undefined ? {} : { id: values.id }),
        ...flags,
      }
    }
    case 'resume': {
      const [id, prompt, ...extra] = rest
      if (id === undefined || extra.length > 0)
        throw usage('resume takes a session id and at most one prompt.')
      return {
        kind: 'resume',
        id,
        takeover: values.takeover,
        ...(prompt === undefined ? {} : { prompt }),
        ...flags,
      }
    }
    case 'sessions':
      if (rest.length > 0) throw usage('sessions takes no arguments.')
      return { kind: 'sessions', root, store }
    case 'demo':
      if (rest.length > 0) throw usage('demo takes no arguments.')
      // The story writes into its own temporary directory unless it is given a database.
      if (values.store !== undefined && chosen?.kind === 'jsonl')
        throw usage('demo writes into its own temporary directory; --store takes a postgres:// URL here.')
      return { kind: 'demo', keep: values.keep, store: chosen?.kind === 'postgres' ? chosen : null }
    default:
      throw usage(`unknown command ${JSON.stringify(command)}; expected run, resume, sessions or demo.`)
  }
}
