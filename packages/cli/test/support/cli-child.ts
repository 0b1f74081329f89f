/**
 * `agent-ledger <args>` from source in a child process (the fault tests SIGKILL it): spawn
 * `process.execPath` with `launchArgs(<this file>, args)` (tooling/launch-args.ts).
 */
import { runCli } from '../../src/index.ts'

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
})
