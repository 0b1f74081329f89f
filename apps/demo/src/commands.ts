import { mkdir } from 'node:fs/promises'
import path from 'node:path'

import { describeEvent } from '@agent-ledger/cli'
import type { TurnEndReason } from '@agent-ledger/session-events'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'

import {
  compressSession,
  isNotFound,
  listSessions,
  openStore,
  sessionPlace,
  storeWhere,
  tornTailRepair,
} from './store.ts'
import type { StoreLocation } from './store.ts'

import { runTurn } from './agent.ts'
import type { CrashPlan, TurnResult } from './agent.ts'
import type { Command, CrashSpec, TurnFlags } from './cli-args.ts'
import { parseCommandLine, USAGE } from './cli-args.ts'
import { MiniAgentError } from './mini-agent-error.ts'
import type { Provider } from './providers/provider.ts'
import {
  createProvider,
  describeCompress,
  describeRepairs,
  newSessionId,
  nextTurnNumber,
  recordedProvider,
  repairPlaceholders,
  startSession,
} from './session.ts'
import { createWorkspaceTools } from './tools.ts'
import { MINI_AGENT } from './invocation.ts'

/** Where a command writes, and what it reads from its surroundings. */
export interface CommandIo {
  /** One line of normal output (no trailing newline). */
  readonly out: (line: string) => void
  /** One line of diagnostics (no trailing newline). */
  readonly err: (line: string) => void
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
  /** Runs `fn` with a signal that fires on the first Ctrl+C. */
  readonly withInterrupt: <TResult>(fn: (signal: AbortSignal) => Promise<TResult>) => Promise<TResult>
  /** Kills the process for a `--crash-at` point (SIGKILL). */
  readonly kill: () => void
  /** Runs the demo story (kept in its own module so tests can run commands without it). */
  readonly runDemo?: (keep: boolean, store: StoreLocation | null) => Promise<number>
}

/** Exit code of a turn: 0 completed, 3 max-tokens, 1 error, 130 aborted. */
function exitCodeOf(reason: TurnEndReason): number {
  switch (reason) {
    case 'completed':
      return 0
    case 'max-tokens':
      return 3
    case 'aborted':
      return 130
    case 'error':
    case 'interrupted':
      return 1
    default:
      return 1
  }
}

function crashPlan(spec: CrashSpec | undefined, io: CommandIo): CrashPlan | undefined {
  if (spec === undefined) return undefined
  return spec.tool === undefined
    ? { point: spec.point, kill: io.kill }
    : { point: spec.point, tool: spec.tool, kill: io.kill }
}

async function runOneTurn(
  writer: SessionWriter,
  context: { provider: Provider; flags: TurnFlags; prompt: string; workspace: string; io: CommandIo },
): Promise<TurnResult> {
  const { io, flags } = context
  const tools = await createWorkspaceTools({ workspace: context.workspace, protectedPaths: [flags.root] })
  const crash = crashPlan(flags.crashAt, io)
  const turn = nextTurnNumber(writer)
  const result = await io.withInterrupt((signal) =>
    runTurn({
      log: writer,
      provider: context.provider,
      tools,
      prompt: context.prompt,
      turn,
      signal,
      onEvent: (event) => io.out(`  ${describeEvent(event)}`),
      ...(flags.maxSteps === undefined ? {} : { maxSteps: flags.maxSteps }),
      ...(crash === undefined ? {} : { crash }),
    }),
  )
  if (result.reason === 'completed' && result.answer !== null) io.out(`\n${result.answer}`)
  if (result.reason === 'aborted') io.err('mini-agent: the turn was aborted by the user and logged as such.')
  if (result.reason === 'max-tokens')
    io.err('mini-agent: the turn ended at the token or step limit (max-tokens).')
  if (result.reason === 'error') io.err(`mini-agent: the provider failed: ${errorLine(result.error)}`)
  return result
}

/**
 * The workspace of `run` when `--workspace` is not given: `.mini-agent/workspace` under the
 * working directory, beside the default session root (created on first use). The agent's files
 * then never land in the directory it was started from: a checkout stays clean, and
 * `--workspace .` is the explicit choice to let the agent work there.
 */
const DEFAULT_WORKSPACE = path.join('.mini-agent', 'workspace')

async function run(command: Extract<Command, { kind: 'run' }>, io: CommandIo): Promise<number> {
  const provider = createProvider(command.provider ?? 'scripted', io.env)
  let workspace = command.workspace
  if (workspace === undefined) {
    workspace = path.join(io.cwd, DEFAULT_WORKSPACE)
    await mkdir(workspace, { recursive: true })
  }
  const tools = await createWorkspaceTools({ workspace, protectedPaths: [command.root] })
  const store = await openStore(command.store, { ...leaseOf(command), compress: command.compress })
  try {
    return await runIn(store, { command, io, provider, workspace: tools.workspace })
  } finally {
    await store.close()
  }
}

function leaseOf(flags: TurnFlags): { leaseMs?: number } {
  return flags.leaseMs === undefined ? {} : { leaseMs: flags.leaseMs }
}

async function runIn(
  store: SessionStore,
  context: {
    command: Extract<Command, { kind: 'run' }>
    io: CommandIo
    provider: Provider
    workspace: string
  },
): Promise<number> {
  const { command, io, provider, workspace } = context
  const id = command.id ?? newSessionId(new Date())
  const writer = await startSession(store, {
    id,
    workspace,
    provider,
  })
  io.out(`session ${id}: ${await sessionPlace(store, command.store, id)}`)
  let code: number
  try {
    const result = await runOneTurn(writer, {
      provider,
      flags: command,
      prompt: command.prompt,
      workspace,
      io,
    })
    code = exitCodeOf(result.reason)
  } finally {
    await writer.close()
  }
  await sealWhenCold(store, { id, io })
  return code
}

async function resume(command: Extract<Command, { kind: 'resume' }>, io: CommandIo): Promise<number> {
  const store = await openStore(command.store, leaseOf(command))
  try {
    const writer = await openForResume(store, command)
    let code: number
    try {
      code = await resumeOpen(writer, { command, io, store })
    } finally {
      await writer.close()
    }
    await sealWhenCold(store, { id: command.id, io })
    return code
  } finally {
    await store.close()
  }
}

async function resumeOpen(
  writer: SessionWriter,
  context: { command: Extract<Command, { kind: 'resume' }>; io: CommandIo; store: SessionStore },
): Promise<number> {
  const { command, io } = context
  io.out(`session ${command.id}: ${await sessionPlace(context.store, command.store, command.id)}`)
  const recovery = writer.recovery
  const torn = tornTailRepair(writer)
  if (torn !== null) io.out(torn)
  if (recovery.repairs.length === 0) io.out('nothing to repair: the log ended cleanly.')
  else {
    io.out(`repaired ${recovery.repairs.length} event(s), durable before anything else:`)
    for (const line of describeRepairs(recovery.repairs)) io.out(`  ${line}`)
    for (const { message } of repairPlaceholders(writer)) {
      io.out('the model will receive this placeholder:')
      for (const line of JSON.stringify(message, null, 2).split('\n')) io.out(`  ${line}`)
    }
  }
  if (command.prompt === undefined) return 0
  const provider = createProvider(command.provider ?? recordedProvider(writer), io.env)
  const workspace = command.workspace ?? writer.header.cwd ?? io.cwd
  const result = await runOneTurn(writer, {
    provider,
    flags: command,
    prompt: command.prompt,
    workspace,
    io,
  })
  return exitCodeOf(result.reason)
}

/**
 * Once the writer is closed (the session is cold), reseals a compressed log into large
 * frames. A plain log is left alone (`--compress` is chosen at `run`). A failure is reported
 * and does not change the exit code: every event is already durable in the live log.
 */
async function sealWhenCold(
  store: SessionStore,
  session: { readonly id: string; readonly io: CommandIo },
): Promise<void> {
  try {
    // The store says which encoding the session has (a database has no log file to seal):
    // the demo knows no file names.
    const result = await compressSession(store, session.id, { onlyZstd: true })
    if (result !== null) session.io.out(describeCompress(result))
  } catch (error) {
    session.io.err(
      `mini-agent: the compressed log was left with its per-flush frames, not resealed: ${errorLine(error)}`,
    )
  }
}

async function openForResume(
  store: SessionStore,
  command: Extract<Command, { kind: 'resume' }>,
): Promise<SessionWriter> {
  const { id } = command
  try {
    return await store.openWriter(id, { takeover: command.takeover })
  } catch (error) {
    if (isNotFound(error)) {
      const shown = storeWhere(command.store)
      const where = command.store.kind === 'jsonl' ? `--root ${shown}` : '--store <the same URL>'
      throw new MiniAgentError({
        code: 'SESSION_NOT_FOUND',
        message: `There is no session ${JSON.stringify(id)} in ${shown}; list them with ${MINI_AGENT} sessions ${where}.`,
        cause: error,
      })
    }
    if (command.store.kind === 'postgres' && (error as { code?: unknown }).code === 'SESSION_LOCKED') {
      throw new MiniAgentError({
        code: 'SESSION_LOCKED',
        message: `${(error as Error).message} If that writer is dead, wait for its lease to expire or resume with --takeover (it is then fenced: it can write nothing more).`,
        cause: error,
      })
    }
    throw error
  }
}

async function sessions(command: Extract<Command, { kind: 'sessions' }>, io: CommandIo): Promise<number> {
  const store = await openStore(command.store)
  try {
    const listing = await listSessions(store)
    if (listing.sessions.length === 0 && listing.problems.length === 0)
      io.out(`no sessions under ${storeWhere(command.store)}`)
    for (const session of listing.sessions) {
      const parent =
        session.header.parentSession === undefined ? '' : `  forked from ${session.header.parentSession}`
      io.out(`${session.id}  created ${session.header.createdAt}  ${session.size}${parent}`)
    }
    for (const problem of listing.problems) io.err(`${problem.id}: ${errorLine(problem.error)}`)
    return listing.problems.length === 0 ? 0 : 1
  } finally {
    await store.close()
  }
}

/**
 * One line describing an error: its message and, for typed errors, its code.
 *
 * @param error - Anything thrown.
 * @returns The line.
 */
function errorLine(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === 'string' ? `${error.message} (${code})` : error.message
  }
  return String(error)
}

/**
 * Runs mini-agent's command line to completion.
 *
 * @param argv - Arguments after the script name.
 * @param io - Output, environment, interrupt and kill hooks.
 * @returns The process exit code: 0 done, 1 error, 2 usage, 3 max-tokens, 130 aborted.
 */
export async function runCommandLine(argv: readonly string[], io: CommandIo): Promise<number> {
  try {
    const command = parseCommandLine(argv, io.cwd, io.env)
    switch (command.kind) {
      case 'help':
        io.out(USAGE)
        return 0
      case 'run':
        return await run(command, io)
      case 'resume':
        return await resume(command, io)
      case 'sessions':
        return await sessions(command, io)
      case 'demo':
        if (io.runDemo === undefined) throw new Error('The demo is not available in this build.')
        return await io.runDemo(command.keep, command.store)
    }
  } catch (error) {
    io.err(`mini-agent: ${errorLine(error)}`)
    if (MiniAgentError.is(error) && error.code === 'USAGE') {
      io.err(`run ${MINI_AGENT} --help for usage.`)
      return 2
    }
    return 1
  }
}
