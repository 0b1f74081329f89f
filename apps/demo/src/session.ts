import { randomBytes } from 'node:crypto'

import type { RepairAction } from '@agent-ledger/loop-repair'
import type { WireMessage } from '@agent-ledger/session-events'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'
import type { CompressResult } from '@agent-ledger/session-store-jsonl'

import type { ProviderName } from './cli-args.ts'
import { createOpenAiProvider, openAiConfigFromEnv } from './providers/openai.ts'
import type { Provider } from './providers/provider.ts'
import { createScriptedProvider } from './providers/scripted.ts'

/** The system prompt logged as the first event of every mini-agent session. */
const SYSTEM_PROMPT =
  'You are mini-agent, a small coding agent working in one workspace directory through the tools ' +
  'list_dir, read_file, write_file and run_command; paths outside the workspace are refused. A tool ' +
  'result starting with "Error:" failed. A result marked [TOOL_OUTCOME_UNKNOWN] answers a call that an ' +
  'earlier run started but never finished: its effect may or may not have happened, so check the state ' +
  'before repeating anything that changes it. [TOOL_NOT_STARTED] means the call never ran and may be retried.'

/**
 * A new session id from the clock and 3 random bytes, e.g. `20250101-120000-a1b2c3`.
 *
 * @param now - The current time.
 * @returns An id matching `SESSION_ID_PATTERN`.
 */
export function newSessionId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  return `${stamp}-${randomBytes(3).toString('hex')}`
}

/**
 * Creates the provider named on the command line (or recorded in the session).
 *
 * @param name - `scripted` or `openai`.
 * @param env - The environment the openai provider reads its settings from.
 * @returns The provider.
 * @throws {@link MiniAgentError} `PROVIDER_CONFIG` when openai's variables are missing.
 */
export function createProvider(
  name: ProviderName,
  env: Readonly<Record<string, string | undefined>>,
): Provider {
  return name === 'openai' ? createOpenAiProvider(openAiConfigFromEnv(env)) : createScriptedProvider()
}

/** The provider a session was started with, from its header metadata (`scripted` when unknown). */
export function recordedProvider(writer: Pick<SessionWriter, 'header'>): ProviderName {
  const value = writer.header.metadata?.provider
  return value === 'openai' ? 'openai' : 'scripted'
}

/**
 * Creates a mini-agent session: the header records the workspace and the provider, and the
 * system prompt is logged (and flushed) as seq 0.
 *
 * A directory store opened with `compress` (`openStore`) writes `session.v4.jsonl.zstd` from
 * the start (the header in its own Zstandard frame, then one frame per durable flush), so even
 * a run that is killed leaves a compressed log; `compressSession` reseals it into large frames
 * once it is cold.
 *
 * @param store - The session store (over a directory or PostgreSQL).
 * @param request - The id, the workspace's real path and the provider.
 * @returns The open writer (the caller closes it).
 * @throws the store's typed error (`SESSION_EXISTS`, `INVALID_SESSION_ID`...).
 */
export async function startSession(
  store: SessionStore,
  request: {
    readonly id: string
    readonly workspace: string
    readonly provider: Provider
  },
): Promise<SessionWriter> {
  const writer = await store.create({
    id: request.id,
    header: {
      cwd: request.workspace,
      metadata: { app: 'mini-agent', provider: request.provider.name, model: request.provider.model },
    },
  })
  writer.append({ type: 'system/message', data: { message: { role: 'system', content: SYSTEM_PROMPT } } })
  await writer.flush()
  return writer
}

/**
 * The number the next turn takes: one more than the `turn/start` events in the log.
 *
 * @param writer - An open writer.
 * @returns The next turn number (1 for a fresh session).
 */
export function nextTurnNumber(writer: Pick<SessionWriter, 'projection'>): number {
  return writer.projection.stats.turns + 1
}

/**
 * The placeholder messages an open just wrote, exactly as the model will receive them
 * (taken from the projection, not rebuilt).
 *
 * @param writer - A writer fresh from `openWriter`.
 * @returns One entry per repair placeholder: its action and the derived message.
 */
export function repairPlaceholders(
  writer: Pick<SessionWriter, 'projection' | 'recovery'>,
): { readonly action: RepairAction; readonly message: WireMessage | undefined }[] {
  const surface = writer.projection.surface()
  return writer.recovery.repairs
    .filter((action) => action.code !== 'CLOSE_TURN')
    .map((action) => ({ action, message: surface.find((node) => node.seq === action.resultSeq)?.message }))
}

/**
 * One line per repair action, for the console.
 *
 * @param repairs - `writer.recovery.repairs`.
 * @returns Human-readable lines; empty when nothing was repaired.
 */
export function describeRepairs(repairs: readonly RepairAction[]): string[] {
  return repairs.map((action) => {
    switch (action.code) {
      case 'TOOL_OUTCOME_UNKNOWN':
        return `seq ${action.resultSeq}: placeholder TOOL_OUTCOME_UNKNOWN for ${action.name} call ${action.callId} (its tool/call, seq ${action.toolCallSeq}, was durable; the result never was)`
      case 'TOOL_NOT_STARTED':
        return `seq ${action.resultSeq}: placeholder TOOL_NOT_STARTED for ${action.name} call ${action.callId} (requested at seq ${action.assistantSeq}, never started)`
      case 'CLOSE_TURN':
        return `seq ${action.resultSeq}: turn/end interrupted for turn ${action.turn}`
      default:
        return `seq ${(action as RepairAction).resultSeq}: ${(action as { code: string }).code}`
    }
  })
}

/**
 * One line describing a compress or reseal, for the console.
 *
 * @param result - What `compressSession` returned.
 * @returns e.g. `compressed log demo/session.v4.jsonl.zstd: 9000 bytes -> 2100 bytes (...)`.
 */
export function describeCompress(result: CompressResult): string {
  const before = result.outcome === 'compressed' ? result.plainBytes : result.compressedBytesBefore
  return `${result.outcome === 'up-to-date' ? 'compressed log already sealed' : `compressed log ${result.outcome}`}: ${result.file}, ${before} bytes -> ${result.compressedBytes} bytes (${result.plainBytes} plain bytes, ratio ${result.ratio.toFixed(1)}, ${result.frames} frames)`
}
