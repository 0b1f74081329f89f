/** Counters kept by a projection; all start at 0 and only grow. */
export interface ProjectionStats {
  /** Events applied. */
  events: number
  /** Events of the four surface types applied (including tool results that were not projected). */
  surfaceEvents: number
  /** Events of an unknown type kept because they were `ignorable: true` (RELIABILITY V5). */
  ignoredUnknown: number
  /** Events of a registered plugin type. */
  pluginEvents: number
  /** `tool/result` events answering no open call of a visible assistant message; not projected (RELIABILITY R4). */
  orphanToolResults: number
  /** `tool/result` events answering a call whose answer is already visible; not projected. */
  duplicateToolResults: number
  /** Surface events applied with a `replace` surfaceOp. */
  replaces: number
  /** Events whose `time` is earlier than the previous event's (RELIABILITY W11); order is `seq` regardless. */
  nonMonotonicTime: number
  /** `turn/start` events applied. */
  turns: number
  /** The highest `turn` of any `turn/start` applied (0 before the first). */
  highestTurn: number
}
