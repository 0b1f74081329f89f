import path from 'node:path'
import { parseArgs } from 'node:util'

import { isCrashPoint } from './agent.ts'
import type { CrashPoint } from './agent.ts'
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
  readonly root: string
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
  | ({ readonly kind: 'resume'; readonly id: string; readonly prompt?: string } & TurnFlags)
  | { readonly kind: 'sessions'; readonly root: string }
  | { readonly kind: 'demo'; readonly keep: boolean }
  | { readonly kind: 'help' }

/** The usage text printed by `mini-agent --help` and after a usage error. */
export const USAGE = `mini-agent: a small coding agent whose history lives in an agent-ledger session log.

Usage:
  mini-agent run [--root DIR] [--workspace DIR] [--provider scripted|openai] [--id ID] [--compress] "<prompt>"
  mini-agent resume <id> [--root DIR] [--workspace DIR] [--provider scripted|openai] ["<prompt>"]
  mini-agent sessions [--root DIR]
  mini-agent demo [--keep]

Options:
  --root DIR        session root (default: .mini-agent/sessions under the current directory)
  --workspace DIR   the directory the tools may touch (run: the current directory; resume: the session's)
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

function parseSteps(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const steps = Number(value)
  if (!Number.isInteger(steps) || steps < 1)
    throw usage(`--max-steps is ${JSON.stringify(value)}; expected a positive integer.`)
  return steps
}

/**
 * Parses mini-agent's command line.
 *
 * @param argv - The arguments after the script name (`process.argv.slice(2)`).
 * @param cwd - The working directory the default root and relative paths resolve against.
 * @returns The command; no argument at all means `demo`.
 * @throws {@link MiniAgentError} `USAGE` naming what is wrong.
 */
export function parseCommandLine(argv: readonly string[], cwd: string): Command {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        root: { type: 'string' },
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
  const root = path.resolve(cwd, values.root ?? path.join('.mini-agent', 'sessions'))
  const provider = parseProvider(values.provider)
  const maxSteps = parseSteps(values['max-steps'])
  const flags: TurnFlags = {
    root,
    ...(values.workspace === undefined ? {} : { workspace: path.resolve(cwd, values.workspace) }),
    ...(provider === undefined ? {} : { provider }),
    ...(maxSteps === undefined ? {} : { maxSteps }),
    ...(values['crash-at'] === undefined ? {} : { crashAt: parseCrash(values['crash-at']) }),
  }
  switch (command) {
    case 'run': {
      if (rest.length !== 1 || rest[0]!.trim() === '') throw usage('run takes exactly one prompt argument.')
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
      return { kind: 'resume', id, ...(prompt === undefined ? {} : { prompt }), ...flags }
    }
    case 'sessions':
      if (rest.length > 0) throw usage('sessions takes no arguments.')
      return { kind: 'sessions', root }
    case 'demo':
      if (rest.length > 0) throw usage('demo takes no arguments.')
      return { kind: 'demo', keep: values.keep }
    default:
      throw usage(`unknown command ${JSON.stringify(command)}; expected run, resume, sessions or demo.`)
  }
}
