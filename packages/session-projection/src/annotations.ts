/**
 * Which log-only events a projection carries as annotations: the framework adapters' own
 * (`ai-sdk/...`, `openai-agents/...`: UI ids, approvals, provider-executed tools, exact SDK
 * items, history transactions), the state they resume from. Other plugin and ignorable
 * events are not carried: some are bulk (an import's `import/source-record` keeps every source
 * record verbatim), and a checkpoint holding them would copy the log. Changing the list
 * changes what snapshots hold: bump `SNAPSHOT_VERSION` with it.
 */
const ANNOTATION_NAMESPACES: readonly string[] = ['ai-sdk/', 'openai-agents/']

/** Whether events of `type` (a plugin or ignorable type) are annotations. */
export function isAnnotationType(type: string): boolean {
  return ANNOTATION_NAMESPACES.some((namespace) => type.startsWith(namespace))
}
