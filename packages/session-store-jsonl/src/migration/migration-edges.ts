import type { MigrationEdge } from './migration-edge.ts'
import { V0_TO_V4_EDGE } from './v0-to-v4.ts'

/**
 * Every migration edge this library ships, in one place. A path from any source version to
 * the current one is found through them ({@link findMigrationPath}); a future format adds
 * its edge here (for example 4 to 5) and older sessions reach it through the chain.
 *
 * v1 to v3 were never written by this library, so v0 goes to v4 in one edge.
 */
export const MIGRATION_EDGES: readonly MigrationEdge[] = Object.freeze([V0_TO_V4_EDGE])
