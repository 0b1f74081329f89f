/**
 * @packageDocumentation
 * The pure parts of a backend's sidecar search index, for backend authors
 * (`@agent-ledger/session-store/search-index`): trigram signatures of blocks of log lines
 * and the fixed-size, checksummed records of an index file. No I/O, no clock: the backend
 * reads and writes the file; what a record means is here, once. The JSONL backend uses it
 * behind `capabilities.search` (see docs/decisions/2026-12-02-search.md).
 */
export {
  addTrigrams,
  ASCII_LOWER,
  fragmentBits,
  holdsFoldedLetter,
  SIGNATURE_BYTES,
  signatureHas,
} from './signature.ts'
export { isMissingOrDamage } from '../search.ts'
export { BlockBuilder, isIndexedLine, sameBinding } from './blocks.ts'
export {
  chainStep,
  decodeBlock,
  decodeHeader,
  encodeHeader,
  RECORD_BYTES,
  SIGNATURE_OFFSET,
} from './records.ts'
export type { ChainEnd, IndexBlock, IndexHeader } from './records.ts'
