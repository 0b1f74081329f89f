/**
 * Error codes of generations, migration and publish-by-link (issue 5, part 2).
 *
 * They are kept apart from `JsonlErrorCode` until the lead merges them into that table;
 * {@link GenerationError} has the same constructor and fields as `JsonlStoreError`, so the
 * merge is a rename. Codes that already exist in `JsonlErrorCode` (CORRUPT_LINE, SEQ_GAP,
 * UNKNOWN_EVENT_TYPE, INVALID_EVENT, INVALID_HEADER, SYMLINK_REFUSED...) are thrown as
 * `JsonlStoreError` by these modules, never duplicated here.
 */

/** Why a generation could not be chosen, migrated or published. Branch on these, never on `message`. */
export const GenerationErrorCode = {
  /**
   * A session directory holds plain and `.zstd` generations of different versions (one
   * directory holds one encoding; only the same version in both encodings may sit side by
   * side, while a `compress` conversion runs). `details.files` names both files.
   */
  MIXED_ENCODINGS: 'MIXED_ENCODINGS',
  /** A generation's file name says one format version and its header another (`details.nameVersion`, `details.headerVersion`). */
  GENERATION_VERSION_MISMATCH: 'GENERATION_VERSION_MISMATCH',
  /**
   * The generation a newer one was migrated from changed after the migration (events
   * appended to it, or its bytes rewritten): `details.lastSeq`, `details.migratedFromLastSeq`,
   * `details.reason` ('appended' | 'rewritten' | 'truncated'). Never merged or ignored.
   */
  GENERATION_FORK: 'GENERATION_FORK',
  /** No chain of registered migration edges leads from the source version to the target version (`details.from`, `details.to`). */
  NO_MIGRATION_PATH: 'NO_MIGRATION_PATH',
  /**
   * A publish (migrate, compress, create, salvage) failed at `details.step` with
   * `details.cause` (an errno code or an error code). The temp file was removed and nothing
   * was published, unless `details.published` is true. `details.poisoned` is true after a
   * failed fsync: the caller must stop writing and reopen.
   */
  MIGRATION_FAILED: 'MIGRATION_FAILED',
  /**
   * The target file already exists and does not begin with exactly the bytes this publish
   * would have written (`details.reason` 'different-bytes' with `details.firstDifferenceOffset`,
   * 'target-not-migrated-from-source', or 'exists' when the caller refused any existing file).
   */
  MIGRATION_CONFLICT: 'MIGRATION_CONFLICT',
} as const
export type GenerationErrorCode = (typeof GenerationErrorCode)[keyof typeof GenerationErrorCode]

const brand = Symbol.for('@agent-ledger/session-store-jsonl/GenerationError')

/**
 * Thrown by the generation, migration and publish modules with a {@link GenerationErrorCode}.
 * Same shape as `JsonlStoreError` (file relative to the store root, line, offset, seq,
 * lastGoodSeq, details), so the lead can merge the codes into that class.
 */
export class GenerationError extends Error {
  override readonly name = 'GenerationError'
  readonly code: GenerationErrorCode
  /** The file concerned, relative to the store root when possible. */
  readonly file: string
  /** 1-based line number, when the error concerns one line. */
  readonly line: number | undefined
  /** Byte offset concerned, when known. */
  readonly offset: number | undefined
  /** The offending event's `seq`, when there is one. */
  readonly seq: number | undefined
  /** The last `seq` that passed every check before the error, when known. */
  readonly lastGoodSeq: number | undefined
  /** Row-specific context (files, step, cause, poisoned, nameVersion, headerVersion...). */
  readonly details: Readonly<Record<string, unknown>>
  readonly [brand] = true

  constructor(options: {
    code: GenerationErrorCode
    message: string
    file: string
    line?: number | undefined
    offset?: number | undefined
    seq?: number | undefined
    lastGoodSeq?: number | undefined
    details?: Readonly<Record<string, unknown>> | undefined
    cause?: unknown
  }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code
    this.file = options.file
    this.line = options.line
    this.offset = options.offset
    this.seq = options.seq
    this.lastGoodSeq = options.lastGoodSeq
    this.details = options.details ?? {}
  }

  /** True for a `GenerationError` from any copy of this package. */
  static is(value: unknown): value is GenerationError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
