/**
 * The seek point of a checkpoint (its own module: the lease state, the scanner and the
 * checkpoint capability all use it).
 */

/**
 * Where a read of seqs `>= fromSeq` may start: the file offset of line `fromSeq` (for a
 * `.zstd` log, the start of the frame whose first line it is), its plain-content offset, and
 * the checksum that line must have.
 */
export interface SeekPoint {
  /** The log's file name (`session.v4.jsonl` or `session.v4.jsonl.zstd`): another log ignores it. */
  readonly log: string
  readonly fromSeq: number
  readonly offset: number
  readonly plainOffset: number
  readonly firstCrc: string
}
