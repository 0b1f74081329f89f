import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { describeEvent, runCli } from '@agent-ledger/cli'
import { validateProviderMessages } from '@agent-ledger/loop-repair'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import type { SessionStore, SessionWriter } from '@agent-ledger/session-store'

import {
  cliSession,
  compressSession,
  lastStoredLine,
  openStore,
  sessionPlace,
  storeWhere,
  verifySession,
} from './store.ts'
import type { StoreLocation } from './store.ts'

import { runTurn } from './agent.ts'
import { createScriptedProvider } from './providers/scripted.ts'
import { describeRepairs, nextTurnNumber, repairPlaceholders, startSession } from './session.ts'
import { createWorkspaceTools } from './tools.ts'
import type { WorkspaceTools } from './tools.ts'
import { AGENT_LEDGER, MINI_AGENT } from './invocation.ts'

/** What a child run of mini-agent did. */
export interface ChildRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** One line of output (no trailing newline). */
  readonly out: (line: string) => void
  /** Runs mini-agent as a child process with these arguments (default: {@link spawnSelf}). */
  readonly spawnChild?: (args: readonly string[], env?: Readonly<Record<string, string>>) => Promise<ChildRun>
  /** Parent directory of the demo's temporary directory (default `os.tmpdir()`). */
  readonly tmpDir?: string
  /**
   * A PostgreSQL store to tell the story on (`mini-agent demo --store postgres://...`, or
   * `pnpm demo:postgres`); default: a JSONL directory inside the temporary directory.
   */
  readonly storeUrl?: string
}

const MAIN_SCRIPT = fileURLToPath(new URL('./main.ts', import.meta.url))

/**
 * Runs an `agent-ledger` command in-process (the CLI's `runCli`), output captured.
 *
 * @param argv - The arguments after `agent-ledger`.
 * @returns Its exit code and output.
 */
async function agentLedger(
  argv: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli([...argv, ...(argv[0] === 'export' ? ['--no-progress'] : [])], {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
  })
  return { code, stdout, stderr }
}

/**
 * Runs mini-agent as a child process: the same Node binary with the same flags (`process.execArgv`:
 * tsx's loader and the source condition), so it works under `pnpm demo`, `tsx` and the tests.
 *
 * @param args - Arguments after the script name.
 * @returns The exit code or the signal that killed it, and its output.
 */
function spawnSelf(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, MAIN_SCRIPT, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      resolve({
        code,
        signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      })
    })
  })
}

const NOTES = `# Release notes draft

The session log is append-only: events are never edited or deleted.
The model-visible history is derived from the log before every request.
A crash between a tool call and its result is repaired honestly on resume.
`

const TODO = `- write the README
- record a crash and resume it
- fork the session before the crash
- compact the first turn
`

async function readAll(store: SessionStore, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) events.push(event)
  return events
}

/**
 * Runs the whole offline story of mini-agent in a fresh temporary directory and prints what
 * happens at each step and where the files are: a session that calls tools; a real crash (a
 * child process SIGKILLed after a `tool/call` is durable); a resume showing the
 * `TOOL_OUTCOME_UNKNOWN` placeholder the model receives; a continued turn; a fork at an
 * earlier seq; a compaction; a verify; an export; a compress. No network, no keys; the output
 * is the same on every run apart from times, temporary paths and compressed sizes.
 *
 * @param options - Output, and the child-process runner (tests may inject one).
 * @returns 0 when every step behaved as told, 1 otherwise (the reason is printed).
 */
export async function runDemo(options: DemoOptions): Promise<number> {
  const base = await mkdtemp(path.join(options.tmpDir ?? os.tmpdir(), 'mini-agent-demo-'))
  const root = path.join(base, 'sessions')
  const workspace = path.join(base, 'workspace')
  await mkdir(workspace, { recursive: true })
  await writeFile(path.join(workspace, 'notes.md'), NOTES)
  await writeFile(path.join(workspace, 'todo.txt'), TODO)
  const location: StoreLocation =
    options.storeUrl === undefined ? { kind: 'jsonl', root } : { kind: 'postgres', url: options.storeUrl }
  const store = await openStore(location)
  try {
    return await story(store, { ...options, location, base, root, workspace })
  } finally {
    await store.close()
  }
}

async function story(
  store: SessionStore,
  context: DemoOptions & {
    readonly location: StoreLocation
    readonly base: string
    readonly root: string
    readonly workspace: string
  },
): Promise<number> {
  const { out, base, root, workspace, location } = context
  const place = (sessionId: string): Promise<string> => sessionPlace(store, location, sessionId)
  const spawnChild = context.spawnChild ?? spawnSelf
  const step = (title: string): void => out(`\n== ${title} ==`)
  const fail = (message: string): number => {
    out(`\nDEMO FAILED: ${message}`)
    return 1
  }
  // A child mini-agent gets `--root DIR`, or the database URL in AGENT_LEDGER_STORE: never on
  // its command line (visible in `ps`) nor in the output (it may hold a password).
  const storeArgs = location.kind === 'jsonl' ? ['--root', root] : []
  const childEnv: Record<string, string> =
    location.kind === 'jsonl' ? {} : { AGENT_LEDGER_STORE: context.storeUrl! }
  const provider = createScriptedProvider()
  const tools: WorkspaceTools = await createWorkspaceTools({ workspace, protectedPaths: [root] })
  const print = (event: LoggedEvent): void => out(`  ${describeEvent(event)}`)
  const turn = async (writer: SessionWriter, prompt: string) => {
    out(`  > ${prompt}`)
    const result = await runTurn({
      log: writer,
      provider,
      tools,
      prompt,
      turn: nextTurnNumber(writer),
      onEvent: print,
    })
    out(`  turn ended: ${result.reason}${result.answer === null ? '' : `; answer: ${result.answer}`}`)
    return result
  }

  out('mini-agent demo: an offline story on the built-in scripted model (no network, no keys).')
  out(`temporary directory: ${base}`)
  out(`  workspace (the only place the tools may touch): ${workspace}`)
  out(`  sessions: ${storeWhere(location)}`)

  // 1. A session that calls tools.
  step('1. A session that calls tools')
  // A database may hold an earlier run's story: this run's sessions get their own ids.
  const id = location.kind === 'jsonl' ? 'demo' : `demo-${randomBytes(3).toString('hex')}`
  const forkId = `${id}-fork`
  let writer = await startSession(store, { id, workspace: tools.workspace, provider })
  out(`session ${id}, ${location.kind === 'jsonl' ? 'log file' : 'stored as'} ${await place(id)}`)
  const first = await turn(writer, 'Summarize notes.md')
  if (first.reason !== 'completed') return fail(`turn 1 ended ${first.reason}`)
  const turnOneEnd = writer.projection.nextSeq - 1
  await writer.close()
  out(`the workspace now holds notes.md.summary.md; the log holds ${turnOneEnd + 1} events, all durable.`)

  // 2. A crash in the middle of a tool call: a child process, really killed.
  step('2. A crash in the middle of a tool call')
  const crashArgs = [
    'resume',
    id,
    ...storeArgs,
    '--workspace',
    workspace,
    '--crash-at',
    'after-tool-call:write_file',
    'Summarize todo.txt',
  ]
  out(
    `running a child: mini-agent ${crashArgs.map((arg) => (arg.includes(' ') ? JSON.stringify(arg) : arg)).join(' ')}`,
  )
  out('it SIGKILLs itself right after the write_file tool/call is durable, before the tool runs.')
  if (location.kind === 'postgres') out(`(the child reads the store URL from AGENT_LEDGER_STORE)`)
  const child = await spawnChild(crashArgs, childEnv)
  for (const line of child.stdout.trimEnd().split('\n')) out(`  child | ${line}`)
  if (child.signal !== 'SIGKILL') {
    return fail(
      `the child was expected to die by SIGKILL, found code ${String(child.code)}, signal ${String(child.signal)}: ${child.stderr}`,
    )
  }
  out(
    `the child process was killed by SIGKILL: no close, no final flush, the ${location.kind === 'jsonl' ? 'lock' : 'writer lease'} left behind.`,
  )
  const lastLine = await lastStoredLine(store, id)
  out(`last line of ${await place(id)}:`)
  out(`  ${lastLine.length > 160 ? `${lastLine.slice(0, 159)}…` : lastLine}`)
  const before = await store.openReader(id)
  out(
    `read-only look (changes nothing): ${before.lastSeq + 1} events, ${before.pendingToolCalls.length} tool call(s) without a result: ${before.pendingToolCalls.map((call) => `${call.name} ${call.callId}`).join(', ')}`,
  )

  // 3. Resume: the store takes over the dead child's lock and loop-repair closes the turn.
  step('3. Resume: the repair and the placeholder the model receives')
  // JSONL: the dead child's lock names a process that is gone, so it is stale. PostgreSQL: its
  // lease runs until it expires; the dead child cannot renew it, so this process takes it over
  // (the child's epoch is fenced: even if it came back, it could write nothing).
  writer = await store.openWriter(id, { takeover: true })
  out(
    location.kind === 'jsonl'
      ? 'openWriter took over the stale lock, scanned the log and appended (and flushed) the repair:'
      : "openWriter took over the dead child's lease (a new fencing epoch), scanned the log and appended (and flushed) the repair:",
  )
  for (const line of describeRepairs(writer.recovery.repairs)) out(`  ${line}`)
  const placeholders = repairPlaceholders(writer)
  const unknown = placeholders.find(({ action }) => action.code === 'TOOL_OUTCOME_UNKNOWN')
  if (unknown?.message === undefined) return fail('the resume produced no TOOL_OUTCOME_UNKNOWN placeholder')
  out('the derived message the model receives for the interrupted call:')
  for (const line of JSON.stringify(unknown.message, null, 2).split('\n')) out(`  ${line}`)
  const issues = validateProviderMessages(writer.deriveMessages())
  out(`provider check of the derived history: ${issues.length} issue(s).`)
  if (issues.length > 0)
    return fail(`the repaired history is not acceptable to a provider: ${issues[0]!.message}`)

  // 4. A continued turn: the model reads the placeholder and verifies before redoing.
  step('4. A continued turn')
  const continued = await turn(writer, 'Continue where you left off.')
  if (continued.reason !== 'completed') return fail(`the continued turn ended ${continued.reason}`)
  const derived = writer.deriveMessages()
  const lastPrompt = derived.findLastIndex((message) => message.role === 'user')
  out('what the model said in this turn, in full:')
  for (const message of derived.slice(lastPrompt + 1)) {
    if (message.role === 'assistant' && message.content !== null) out(`  - ${message.content}`)
  }
  await writer.close()
  const reopened = await store.openWriter(id)
  const addedOnReopen = reopened.recovery.repairs.length
  await reopened.close()
  out(
    `reopening the session again repairs nothing more (${addedOnReopen} repair events): repair is idempotent.`,
  )

  // 5. A fork at an earlier seq: before the crash.
  step('5. A fork at an earlier seq')
  const parentBefore = (await store.verify(id)).events
  const fork = await store.fork(id, { to: forkId, atSeq: turnOneEnd })
  out(`forked ${id} at seq ${turnOneEnd} (the end of turn 1, before the crash) into ${forkId}:`)
  out(
    `  header: parentSession=${String(fork.header.parentSession)}, inheritedEventCount=${String(fork.header.inheritedEventCount)}`,
  )
  out(
    `  the fork's model sees ${fork.deriveMessages().length} messages; its log has ${fork.projection.nextSeq} events ending in session/end-seed`,
  )
  const forkTurn = await runTurn({
    log: fork,
    provider,
    tools,
    prompt: 'run: ls',
    turn: nextTurnNumber(fork),
    onEvent: print,
  })
  await fork.close()
  out(`  fork turn ended: ${forkTurn.reason}`)
  const parentAfter = (await store.verify(id)).events
  out(`the parent is untouched: ${parentBefore} events before the fork, ${parentAfter} after.`)
  if (parentAfter !== parentBefore) return fail('the fork changed the parent')

  // 6. A compaction of turn 1.
  step('6. A compaction')
  writer = await store.openWriter(id)
  const events = await readAll(store, id)
  const turnOneUser = events.find((event) => event.type === 'user/message')
  const surface = writer.projection.surface()
  const turnOneLast = surface.filter((node) => node.seq <= turnOneEnd).at(-1)
  if (turnOneUser === undefined || turnOneLast === undefined) return fail('turn 1 is not on the surface')
  const messagesBefore = writer.deriveMessages().length
  const eventsBefore = writer.projection.nextSeq
  const inputs = planCompaction(writer.projection, {
    compactionId: 'compact-turn-1',
    startSeq: turnOneUser.seq,
    endSeq: turnOneLast.seq,
    summary:
      'Turn 1: the user asked for a summary of notes.md; I listed the workspace, read notes.md and wrote notes.md.summary.md.',
    reason: 'demo',
  })
  for (const input of inputs) print(writer.append(input))
  await writer.flush()
  out(
    `the model now sees ${writer.deriveMessages().length} messages instead of ${messagesBefore}; the log grew from ${eventsBefore} to ${writer.projection.nextSeq} events (nothing deleted).`,
  )
  await writer.close()

  // 7. Verify.
  step('7. Verify')
  for (const sessionId of [id, forkId]) {
    const report = await verifySession(store, location, sessionId)
    out(
      `${sessionId}: ${report.status}, ${report.events} events (last seq ${report.lastSeq}), ${report.detail}`,
    )
    if (report.status !== 'ok') return fail(`${sessionId} does not verify: ${report.status}`)
  }

  // 8. Export.
  step('8. Export')
  // The transcript is the CLI's own `agent-ledger export --format md` (one implementation).
  const exportPath = path.join(base, 'demo.md')
  const exported = await agentLedger([
    'export',
    ...cliSession(store, location, id),
    '--format',
    'md',
    '-o',
    exportPath,
  ])
  if (exported.code !== 0) return fail(`agent-ledger export exited ${exported.code}: ${exported.stderr}`)
  const markdown = await readFile(exportPath, 'utf8')
  out(`markdown transcript of ${id}: ${exportPath} (${markdown.split('\n').length} lines)`)
  const placeholderLine = markdown.split('\n').find((line) => line.includes('Repair placeholder'))
  if (placeholderLine !== undefined) out(`  ${placeholderLine}`)

  if (location.kind === 'jsonl') {
    // 9. Compress the cold session.
    step('9. Compress')
    const eventsBeforeCompress = (await store.verify(id)).events
    const compressed = await compressSession(store, id)
    if (compressed === null) return fail('a directory store could not compress')
    out(
      `compress the session: ${compressed.plainBytes} bytes -> ${compressed.compressedBytes} bytes (${compressed.file}, ${compressed.frames} zstd frames; the plain log is removed)`,
    )
    const afterCompress = await verifySession(store, location, id)
    out(
      `${id}: ${afterCompress.status}, ${afterCompress.events} events, read back from ${afterCompress.file ?? '?'}`,
    )
    if (afterCompress.status !== 'ok' || afterCompress.events !== eventsBeforeCompress)
      return fail(`${id} after compress: ${afterCompress.status}, ${afterCompress.events} events`)
    // Every agent-ledger command reads the compressed log as it read the plain one.
    const tail = await agentLedger(['tail', '-n', '2', ...cliSession(store, location, id)])
    if (tail.code !== 0)
      return fail(`agent-ledger tail on the compressed session exited ${tail.code}: ${tail.stderr}`)
    out(`agent-ledger tail -n 2 on the compressed session:`)
    for (const line of tail.stdout.split('\n').filter((text) => text !== '')) out(`  ${line}`)
  } else {
    // 9. A database has no log file to compress: copy the sessions out to a JSONL directory
    // instead, line for line, and read them there.
    step('9. Copy to a JSONL directory')
    for (const sessionId of [id, forkId]) {
      const copied = await agentLedger([
        'copy',
        context.storeUrl!,
        root,
        '--session',
        sessionId,
        '--no-progress',
      ])
      if (copied.code !== 0) return fail(`agent-ledger copy exited ${copied.code}: ${copied.stderr}`)
      out(`  agent-ledger copy <store> ${root} --session ${sessionId}: ${copied.stdout.split('\n')[0] ?? ''}`)
    }
    const tail = await agentLedger(['tail', '-n', '2', ...cliSession(store, location, id)])
    const tailCopy = await agentLedger(['tail', '-n', '2', path.join(root, id)])
    if (tail.code !== 0 || tailCopy.stdout !== tail.stdout)
      return fail(
        `agent-ledger tail differs between the database and the copy: ${tail.stderr}${tailCopy.stderr}`,
      )
    out(`agent-ledger tail -n 2 prints the same on the database and on the copy in ${root}:`)
    for (const line of tail.stdout.split('\n').filter((text) => text !== '')) out(`  ${line}`)
  }

  step('Where everything is')
  for (const sessionId of [id, forkId]) out(`  ${await place(sessionId)}`)
  out(`  ${path.join(workspace, 'notes.md.summary.md')}`)
  out(`  ${path.join(workspace, 'todo.txt.summary.md')}`)
  out(`  ${exportPath}`)
  if (location.kind === 'jsonl') {
    out(`try: ${MINI_AGENT} sessions --root ${root}`)
    out(`try: ${AGENT_LEDGER} export ${path.join(root, id)} --format html -o ${path.join(base, 'demo.html')}`)
  } else {
    // The URL is not printed (it may hold a password): the commands read it from the environment.
    out(`try (with AGENT_LEDGER_STORE set to the store's URL): ${MINI_AGENT} sessions`)
    out(`try: ${AGENT_LEDGER} tail -n 5 ${id}    (or: ${AGENT_LEDGER} list --store "$AGENT_LEDGER_STORE")`)
    out(`the copy in ${root} reads as any JSONL store: ${AGENT_LEDGER} list ${root}`)
  }
  out(`remove it all with: rm -rf ${base}`)
  return 0
}
