// Node resolve hook for the framework-version runs (tooling/frameworks-next.ts): child processes
// spawned by the adapters' tests load it with `--import` so that their bare imports of a
// framework (`ai`, `ai/test`, `@openai/agents-core`) resolve to the copy under test, the way the
// vitest config's aliases do for the test process itself. The aliases come from the
// AGENT_LEDGER_FRAMEWORK_ALIASES environment variable: a JSON object, specifier -> file path.
// Plain JavaScript: hooks run in their own thread, before any TypeScript loader.
import { register } from 'node:module'
import { pathToFileURL } from 'node:url'
import { isMainThread } from 'node:worker_threads'

/** @type {Record<string, string>} */
let aliases = {}

/** Receives the aliases from `register` (runs in the hooks thread). */
export function initialize(data) {
  aliases = data
}

/** Resolves an aliased bare specifier to its file; everything else as usual. */
export async function resolve(specifier, context, nextResolve) {
  const target = aliases[specifier]
  if (target !== undefined) return { url: pathToFileURL(target).href, shortCircuit: true }
  return nextResolve(specifier, context)
}

if (isMainThread) {
  const text = process.env.AGENT_LEDGER_FRAMEWORK_ALIASES
  if (text !== undefined && text !== '') register(import.meta.url, { data: JSON.parse(text) })
}
