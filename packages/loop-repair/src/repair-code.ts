/**
 * How a repair placeholder answers a tool call that never got a result. Repair codes are
 * data carried by the placeholder `tool/result` (`data.code`), never exceptions.
 */
export const RepairCode = {
  /**
   * A `tool/call` was logged, so the tool may have started and its side effect may have
   * happened. Only read-only or idempotent tools may be retried; otherwise verify first.
   */
  TOOL_OUTCOME_UNKNOWN: 'TOOL_OUTCOME_UNKNOWN',
  /** The call exists only in the assistant message: it was never started and is safe to retry. */
  TOOL_NOT_STARTED: 'TOOL_NOT_STARTED',
} as const
export type RepairCode = (typeof RepairCode)[keyof typeof RepairCode]

/**
 * True when `value` is one of the {@link RepairCode} values, e.g. to recognise a repair
 * placeholder by its `data.code`.
 *
 * @param value - Any value, typically a `tool/result`'s `data.code`.
 * @returns Whether `value` is a repair code.
 */
export function isRepairCode(value: unknown): value is RepairCode {
  return value === RepairCode.TOOL_OUTCOME_UNKNOWN || value === RepairCode.TOOL_NOT_STARTED
}

/**
 * The text the model reads in a repair placeholder: what is known about the call, and
 * what is safe to do next. It never invents an outcome.
 *
 * Deterministic: the same code and call always give the same text. A value outside
 * {@link RepairCode} (possible only from untyped callers) gets the cautious
 * `TOOL_OUTCOME_UNKNOWN` wording, so an unknown code can never claim a retry is safe.
 *
 * @param code - Whether the call had started (`TOOL_OUTCOME_UNKNOWN`) or not (`TOOL_NOT_STARTED`).
 * @param call - The assistant tool call's id and tool name.
 * @returns One paragraph of plain text starting with `Error:` and ending with the code in brackets.
 */
export function placeholderText(code: RepairCode, call: { callId: string; name: string }): string {
  const subject = `tool call ${JSON.stringify(call.callId)} (${JSON.stringify(call.name)})`
  if (code === RepairCode.TOOL_NOT_STARTED) {
    return (
      `Error: the previous run was interrupted before ${subject} was started, so the tool never ran ` +
      `and had no effect. It is safe to retry the call. [${RepairCode.TOOL_NOT_STARTED}]`
    )
  }
  return (
    `Error: the previous run was interrupted after ${subject} was started, so its outcome is unknown: ` +
    `the side effect may or may not have happened, and no result was recorded. ` +
    `Retry it only if the tool is read-only or idempotent; otherwise verify the current state first. ` +
    `[${RepairCode.TOOL_OUTCOME_UNKNOWN}]`
  )
}
