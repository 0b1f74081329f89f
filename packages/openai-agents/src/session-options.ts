/**
 * The adapter's types: the session's options, the history capabilities' arguments, and the
 * log-only record of the SDK's exact items.
 */
import type { SurfaceNode } from '@agent-ledger/session-projection'
import type { OpenWriterOptions } from '@agent-ledger/session-store'
import type {
  AgentInputItem,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionResult,
} from '@openai/agents-core'

/** Type of the log-only events that record the SDK's exact items beside a surface event. */
export const ITEMS_EVENT_TYPE = 'openai-agents/items'

/** An SDK item as plain JSON (what the log holds). */
export type ItemRecord = Record<string, unknown>

/** Data of an {@link ITEMS_EVENT_TYPE} event: the items surface event `forSeq` stands for (none for a tombstone). */
export interface RecordedItems {
  readonly forSeq: number
  readonly items: readonly ItemRecord[]
}

/**
 * Options of {@link openAgentsSession}. The writer options of the core (`owner`, `leaseMs`,
 * `takeover`, `signal`) go to `store.openWriter(id, options)`; `owner`, `leaseMs` and
 * `signal` also to `store.create` when the session is created.
 */
export interface OpenAgentsSessionOptions extends OpenWriterOptions {
  /** Create the session when it does not exist (default true). */
  readonly create?: boolean
  /**
   * What `runCompaction` calls (the runner calls it after each persisted turn): given the
   * history and the runner's arguments, the replacement (a `compaction` item first, e.g. from
   * the OpenAI `responses.compact` endpoint, then the retained items) and its usage, or null to
   * skip. Without it `runCompaction` compacts nothing.
   */
  readonly compact?: Compactor
}

/** The compaction call of {@link OpenAgentsSessionOptions.compact}. */
export type Compactor = (
  request: OpenAIResponsesCompactionArgs & { readonly items: AgentInputItem[] },
) => Promise<{ items: AgentInputItem[]; usage: OpenAIResponsesCompactionResult['usage'] } | null>

/** A history transaction (`SessionHistoryTransactionArgs` of `@openai/agents-core` 0.14 and later). */
export interface HistoryTransactionArgs {
  readonly operationId: string
  readonly transaction:
    | { readonly type: 'append_items'; readonly items: readonly AgentInputItem[] }
    | {
        readonly type: 'replace_suffix'
        readonly expectedSuffix: readonly AgentInputItem[]
        readonly replacement: readonly AgentInputItem[]
      }
}

/** A history rewrite (`SessionHistoryRewriteArgs`): replace a function call's item (e.g. its approved arguments). */
export interface HistoryRewriteArgs {
  readonly mutations: readonly {
    readonly type: 'replace_function_call'
    readonly callId: string
    readonly replacement: AgentInputItem
  }[]
}

/** A surface node of the projection and the SDK items it stands for. */
export interface NodeItems {
  readonly node: SurfaceNode
  readonly items: readonly ItemRecord[]
}

/** A `replace` over surface nodes `startSeq..endSeq`, citing `hidden`. */
export interface ReplaceRange {
  readonly startSeq: number
  readonly endSeq: number
  readonly hidden: readonly number[]
}
