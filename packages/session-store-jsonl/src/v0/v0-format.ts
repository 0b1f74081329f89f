/*
 * Format v0: the seed chapter's own session log (chapter 6, `code/mini-agent/session.ts`),
 * read here so sessions written by the chapter's mini-agent can be brought forward.
 *
 * File `session.jsonl`, one JSON object per line, `\n`-terminated, no checksums. Line 1 is a
 * header EVENT, `{"seq":0,"time":"...","type":"session/header","data":{"version":0,...}}`;
 * events follow from seq 1, dense. Shapes: `turn/start {turn}`, `turn/end {turn, reason}`,
 * `system/message` / `user/message` `{message}` with an optional `surfaceOp`,
 * `assistant/message {message, usage?, interrupted?}`, `tool/call {callId, name, arguments}`,
 * `tool/result {message, isError?}` with `sourceEventSeqs` (the `tool/call` it answers),
 * `compaction/start` and `compaction/summary`. `surfaceOp` is `"append"`, `{op:"append"}`,
 * or `{op:"replace", startSeq, endSeq}` (inclusive, in the v0 numbering). Events may carry
 * `ignorable: true` (the chapter's exercise 2): unknown types are then skipped by readers.
 */

/** The v0 file name. */
export const V0_FILE_NAME = 'session.jsonl'

/** The format version of `session.jsonl`. */
export const V0_FORMAT_VERSION = 0

/** Type of the header event on line 1 (seq 0). */
export const V0_HEADER_TYPE = 'session/header'

/**
 * The event types the chapter's mini-agent writes after the header, plus `compaction/end`
 * (written by later chapters' agents). Migration knows how to map each of them.
 */
export const V0_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'system/message',
  'user/message',
  'assistant/message',
  'tool/call',
  'tool/result',
  'compaction/start',
  'compaction/summary',
  'compaction/end',
])
