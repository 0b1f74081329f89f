/**
 * How a person runs the tools from a checkout (mini-agent is private and never installed):
 * the root scripts of the repository, run from its root. Every hint the demo prints uses
 * these, so it works when pasted.
 */
export const MINI_AGENT = 'pnpm mini-agent'
/** The agent-ledger CLI from a checkout (its sources, no build needed). */
export const AGENT_LEDGER = 'pnpm agent-ledger'
