/**
 * @packageDocumentation
 * The pure core of agent-ledger: an in-memory, append-only session log with seq checks,
 * the surface fold (append and replace) behind an incremental `deriveMessages()`,
 * projection snapshots for checkpoints, and the planning of compactions and forks.
 * No I/O, no clock (time is injected), no randomness.
 */
export { COMPACTION_SUMMARY_PREFIX, planCompaction } from './plan-compaction.ts'
export type { CompactionRequest } from './plan-compaction.ts'
export { planFork } from './plan-fork.ts'
export type { ForkRequest, ForkSeed } from './plan-fork.ts'
export { ProjectionError, ProjectionErrorCode } from './projection-error.ts'
export { createProjection, restoreProjection } from './projection.ts'
export type { Projection, ProjectionOptions, ProjectionStats } from './projection.ts'
export { createSessionLog } from './session-log.ts'
export type { Clock, SessionLog, SessionLogOptions } from './session-log.ts'
export { SNAPSHOT_VERSION } from './snapshot.ts'
export type { OpenCompaction, ProjectionSnapshot } from './snapshot.ts'
export type { SurfaceNode } from './surface.ts'
