/**
 * @packageDocumentation
 * The exactly-once chaos kit of agent-ledger: the tools' own journals and the checker that
 * compares them with the sessions after a faulted run. The checker and the pairing validators
 * are pure; the journal writes and fsyncs files.
 */
export { checkRun, percentile } from './checker.ts'
export type { ChaosCounts, CheckedSession, JournalEntry, LoggedEvent } from './checker.ts'
export { openJournal, readJournals } from './journal.ts'
export type { Journal } from './journal.ts'
export { anthropicPairingDefect, openAiPairingDefect } from './pairing.ts'
export type { PairingDefect, WireMessage } from './pairing.ts'
