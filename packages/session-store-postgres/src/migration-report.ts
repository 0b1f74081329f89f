/** What a migration run did. */
export interface MigrationReport {
  /** Versions applied by this run, oldest first (empty when the schema was current). */
  readonly applied: readonly number[]
  /** The schema version after the run. */
  readonly version: number
}
