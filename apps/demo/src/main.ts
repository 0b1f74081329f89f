#!/usr/bin/env node
/**
 * mini-agent: the demo agent. Until the demo issue lands this only composes the packages
 * and prints what it composed.
 */
import { SESSION_FORMAT_VERSION, coreEventRegistry } from '@agent-ledger/session-events'

const command = process.argv[2] ?? 'demo'
if (command !== 'demo') {
  process.stderr.write(`mini-agent: unknown command ${JSON.stringify(command)}\n`)
  process.exit(2)
}
console.log('mini-agent demo (placeholder): the scripted agent story is not built yet.')
console.log(
  `Composed @agent-ledger/session-events: format v${SESSION_FORMAT_VERSION}, ${coreEventRegistry.types.length} core event types.`,
)
