/**
 * @packageDocumentation
 * The Claude Agent SDK's `SessionStore` over agent-ledger: the transcript the SDK mirrors is
 * appended durably (one verbatim `import/source-record` event per entry, then the
 * model-visible events the importer's Claude Code mapping derives), loaded back deep-equal
 * and in order, with sub-agent transcripts as sessions of their own, the SDK's session
 * summaries, listing from the store's list and `delete` as the store's delete. Takes the
 * core's `SessionStore` over any backend (`createJsonlStore`, PostgreSQL, memory).
 */
export { createClaudeSessionStore } from './claude-session-store.ts'
export type { ClaudeSessionStoreOptions, LedgerClaudeSessionStore } from './claude-session-store.ts'
export { ClaudeStoreError, ClaudeStoreErrorCode } from './claude-store-error.ts'
export {
  MAPPING_STOPPED_EVENT_TYPE,
  MIRROR_DISPOSITION,
  MIRROR_FORMAT,
  REPAIRED_EVENT_TYPE,
  SUMMARY_EVENT_TYPE,
} from './mirror-events.ts'
export type { MappingStopped, Repaired, SummaryRecord } from './mirror-events.ts'
export { KEY_METADATA_FIELD, ledgerSessionId, SESSION_ID_PREFIX } from './session-key.ts'
export type { RecordedKey } from './session-key.ts'
