#!/usr/bin/env node
/**
 * mini-agent: a small coding agent whose whole history lives in an agent-ledger session log.
 * This file only wires the process (argv, stdout, Ctrl+C, SIGKILL for `--crash-at`) to
 * {@link runCommandLine}.
 */
import { runCommandLine } from './commands.ts'
import { runDemo } from './demo.ts'
import { MINI_AGENT } from './invocation.ts'

async function withInterrupt<TResult>(fn: (signal: AbortSignal) => Promise<TResult>): Promise<TResult> {
  const controller = new AbortController()
  const onInterrupt = (): void => {
    if (controller.signal.aborted) {
      process.stderr.write(
        `mini-agent: second Ctrl+C, exiting now; \`${MINI_AGENT} resume <id>\` repairs the log.\n`,
      )
      process.exit(130)
    }
    process.stderr.write('mini-agent: Ctrl+C, aborting the turn (press again to exit at once).\n')
    controller.abort()
  }
  process.on('SIGINT', onInterrupt)
  try {
    return await fn(controller.signal)
  } finally {
    process.off('SIGINT', onInterrupt)
  }
}

const out = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const code = await runCommandLine(process.argv.slice(2), {
  out,
  err: (line) => process.stderr.write(`${line}\n`),
  cwd: process.cwd(),
  env: process.env,
  withInterrupt,
  kill: () => process.kill(process.pid, 'SIGKILL'),
  runDemo: (keep, store) => {
    if (keep) out('(--keep: the temporary directory is always kept; its path is printed below.)')
    return runDemo({ out, ...(store?.kind === 'postgres' ? { storeUrl: store.url } : {}) })
  },
})
process.exit(code)
