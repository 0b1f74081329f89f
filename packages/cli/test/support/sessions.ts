/**
 * Shared helpers for the CLI tests: temp roots, captured io, and sessions written through
 * the one store API (the core over the JSONL backend, `createJsonlStore`), never hand-made
 * files, except where a test damages one on purpose.
 */
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { EventInput } from '@agent-ledger/session-events'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import type { JsonlStore } from '@agent-ledger/session-store-jsonl'
import { LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'

import { runCli } from '../../src/index.ts'
import type { CliIo } from '../../src/index.ts'

/** A fresh 0700 store root under the OS temp dir. */
export function makeRoot(prefix = 'al-cli-'): { root: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), prefix))
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) }
}

/** A clock ticking one second per call from 2026-01-01, so logs are reproducible. */
function steppingClock(start = Date.UTC(2026, 0, 1)): () => string {
  let tick = 0
  return () => new Date(start + 1000 * tick++).toISOString()
}

/**
 * The core over the JSONL backend at `root` with a deterministic clock and a fixed lease
 * owner (its writers flush on `flush`/`close`; warnings are not collected).
 */
export function testStore(root: string): JsonlStore {
  return createJsonlStore({ root, clock: steppingClock(), owner: 'cli-test-writer' })
}

/** What runCli printed, and its exit code. */
export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs the CLI in-process with captured output.
 *
 * @param argv - The arguments.
 * @param io - Extra io fields (cwd, now, signal...).
 */
export async function cli(argv: readonly string[], io: Partial<CliIo> = {}): Promise<CliRun> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    clock: () => '2026-02-01T00:00:00.000Z',
    ...io,
  })
  return { code, stdout, stderr }
}

/** The path of a session's log. */
export function logPath(root: string, id: string): string {
  return join(root, id, LOG_FILE_NAME)
}

/** The log's lines (without their `\n`; the last element is what follows the last `\n`). */
export function logLines(root: string, id: string): string[] {
  return readFileSync(logPath(root, id), 'utf8').split('\n')
}

/** Cuts the last line of a log in half (a torn, unterminated tail). */
export function tearLastLine(root: string, id: string): { keptBytes: number } {
  const path = logPath(root, id)
  const text = readFileSync(path)
  const lastStart = text.lastIndexOf(0x0a, text.length - 2) + 1
  const cut = lastStart + Math.floor((text.length - lastStart) / 2)
  truncateSync(path, cut)
  return { keptBytes: lastStart }
}

/** Flips one byte inside line `lineNumber` (1-based) of a log: damage in the middle. */
export function flipByteInLine(root: string, id: string, lineNumber: number): { offset: number } {
  const path = logPath(root, id)
  const bytes = readFileSync(path)
  let offset = 0
  for (let line = 1; line < lineNumber; line += 1) offset = bytes.indexOf(0x0a, offset) + 1
  // Inside the JSON of the "time" member: stays valid JSON, fails the checksum.
  const position = bytes.indexOf('"time":"', offset) + 10
  bytes[position] = bytes[position] === 0x31 ? 0x32 : 0x31
  writeFileSync(path, bytes)
  return { offset }
}

/** Messages and a tool call in the shape of the seed's mini-agent: one complete turn. */
function toolTurn(
  turn: number,
  options: { readonly user?: string; readonly output?: string; readonly reply?: string } = {},
): EventInput[] {
  const callId = `call_${turn}`
  return [
    { type: 'turn/start', data: { turn } },
    {
      type: 'user/message',
      data: { message: { role: 'user', content: options.user ?? `Please read file ${turn}.` } },
    },
    {
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: `Reading f${turn}.ts`,
          tool_calls: [
            {
              id: callId,
              type: 'function',
              function: { name: 'read_file', arguments: `{"path":"f${turn}.ts"}` },
            },
          ],
        },
      },
    },
    { type: 'tool/call', data: { callId, name: 'read_file', arguments: `{"path":"f${turn}.ts"}` } },
    {
      type: 'tool/result',
      data: {
        message: { role: 'tool', tool_call_id: callId, content: options.output ?? `contents of f${turn}.ts` },
      },
    },
    {
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: options.reply ?? `File ${turn} says hello.` } },
    },
    { type: 'turn/end', data: { turn, reason: 'completed' } },
  ]
}

/**
 * Writes a session through the store: a system message then `turns` complete tool turns.
 *
 * @returns The seqs of the user messages, in order.
 */
export async function writeSession(
  store: SessionStore,
  id: string,
  options: { readonly turns?: number; readonly extra?: readonly EventInput[] } = {},
): Promise<void> {
  const writer = await store.create({ id, header: { cwd: '/srv/demo' } })
  writer.append({
    type: 'system/message',
    data: { message: { role: 'system', content: 'You are a coding agent.' } },
  })
  for (let turn = 1; turn <= (options.turns ?? 2); turn += 1) {
    for (const input of toolTurn(turn)) writer.append(input)
  }
  for (const input of options.extra ?? []) writer.append(input)
  await writer.close()
}

/**
 * Writes a session that crashed in the middle of turn 2: the assistant asked for two
 * calls, the first was started (`tool/call` logged), the second never was.
 */
export async function writeCrashedSession(store: SessionStore, id: string): Promise<void> {
  const writer = await store.create({ id })
  writer.append({
    type: 'system/message',
    data: { message: { role: 'system', content: 'You are a coding agent.' } },
  })
  for (const input of toolTurn(1)) writer.append(input)
  writer.append({ type: 'turn/start', data: { turn: 2 } })
  writer.append({
    type: 'user/message',
    data: { message: { role: 'user', content: 'Delete tmp/ and list src/.' } },
  })
  writer.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_rm',
            type: 'function',
            function: { name: 'run_command', arguments: '{"cmd":"rm -rf tmp"}' },
          },
          { id: 'call_ls', type: 'function', function: { name: 'list_dir', arguments: '{"path":"src"}' } },
        ],
      },
    },
  })
  writer.append({
    type: 'tool/call',
    data: { callId: 'call_rm', name: 'run_command', arguments: '{"cmd":"rm -rf tmp"}' },
  })
  await writer.close()
}
