/**
 * @packageDocumentation
 * The exactly-once chaos kit of agent-ledger: worker processes that run tool-heavy sessions
 * through the adapters, a driver that faults them at seeded points, the tools' own journals,
 * and the checker that compares the journals with the sessions (pure).
 */
export { checkRun, percentile } from './checker.ts'
export type { ChaosCounts, CheckedSession, JournalEntry, LoggedEvent } from './checker.ts'
export { openJournal, readJournals } from './journal.ts'
export type { Journal } from './journal.ts'
export { runChaos } from './driver.ts'
export type { ChaosOptions, ChaosResult } from './driver.ts'
export type { Adapter, Baseline, Fault, FaultKind, FaultPoint, Subject } from './plan.ts'
