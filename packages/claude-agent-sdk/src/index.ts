/**
 * @packageDocumentation
 * The Claude Agent SDK's `SessionStore` over agent-ledger: the transcript the SDK mirrors is
 * appended durably (one verbatim `import/source-record` event per entry), loaded back
 * deep-equal and in order, with sub-agent transcripts as sessions of their own, listing from
 * the store's list and `delete` as an append-only marker. Takes the core's `SessionStore`
 * over any backend (`createJsonlStore`, PostgreSQL, memory).
 */
export {
  createClaudeSessionStore,
  DELETED_EVENT_TYPE,
  MIRROR_DISPOSITION,
  MIRROR_FORMAT,
} from './claude-session-store.ts'
export type {
  ClaudeSessionStoreOptions,
  DeletedMarker,
  LedgerClaudeSessionStore,
} from './claude-session-store.ts'
export { ClaudeStoreError, ClaudeStoreErrorCode } from './claude-store-error.ts'
export { KEY_METADATA_FIELD, ledgerSessionId, SESSION_ID_PREFIX } from './session-key.ts'
export type { RecordedKey } from './session-key.ts'
