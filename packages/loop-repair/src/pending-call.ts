/** An assistant tool call that has no `tool/result` yet. */
export interface PendingToolCall {
  /** The wire tool call id (`tool_calls[i].id`); ids may repeat across assistant messages. */
  readonly callId: string
  /** The tool's name. */
  readonly name: string
  /** The raw JSON argument text the model produced. */
  readonly arguments: string
  /** Seq of the `assistant/message` that requested the call. */
  readonly assistantSeq: number
  /** Seq of the `tool/call` that started it, or `null` when the call was never started. */
  readonly toolCallSeq: number | null
}
