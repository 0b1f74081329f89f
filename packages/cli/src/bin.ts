#!/usr/bin/env node
import { processIo } from './io.ts'
import { runCli } from './run-cli.ts'

const argv = process.argv.slice(2)
const io = processIo()
// `cat ... | head` closes the pipe early: stop quietly instead of crashing on EPIPE.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw error
})
if (argv[0] === 'tail' || (argv[0] === 'import' && argv.includes('--follow'))) {
  // tail -f and import --follow run until SIGINT: end them cleanly (exit 0); a second SIGINT exits at once.
  const controller = new AbortController()
  process.once('SIGINT', () => {
    controller.abort()
    process.once('SIGINT', () => process.exit(130))
  })
  io.signal = controller.signal
}
process.exitCode = await runCli(argv, io)
