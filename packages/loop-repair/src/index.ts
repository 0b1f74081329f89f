/**
 * @packageDocumentation
 * Honest repair of interrupted agent turns. Plans the events that close a crashed log: an
 * `isError` placeholder `tool/result` per unanswered tool call (`TOOL_OUTCOME_UNKNOWN` when
 * the call may have run, `TOOL_NOT_STARTED` when it never did), then `turn/end`
 * `interrupted`. Also diagnoses call/result pairing and checks a message list against an
 * OpenAI-compatible provider's rules; converts one to the Anthropic Messages shape and checks
 * that shape's tool rule. Pure: no I/O, no clock, no randomness.
 */
export { DiagnosticCode, diagnoseToolPairing, validateProviderMessages } from './diagnose.ts'
export type { Diagnostic, ProviderIssue } from './diagnose.ts'
export { isRepairCode, placeholderText, RepairCode } from './repair-code.ts'
export { advanceRepairState, createRepairState, planRepair, planRepairFromState } from './repair-state.ts'
export type { PendingToolCall, RepairAction, RepairPlan, RepairState } from './repair-state.ts'
export { noProviderExportLoss, toAnthropic, validateAnthropicRequest } from './anthropic.ts'
export type { AnthropicBlock, AnthropicIssue, AnthropicRequest, ProviderExportLoss } from './anthropic.ts'
