import { spawn } from 'node:child_process'
import { constants } from 'node:fs'
import { lstat, mkdir, open, readdir, realpath, stat } from 'node:fs/promises'
import path from 'node:path'

import { z } from 'zod'

import { MiniAgentError } from './mini-agent-error.ts'
import { realPathAllowingMissing, resolveInWorkspace } from './workspace-path.ts'

/** A tool as the model sees it: an OpenAI function definition with a JSON Schema for its arguments. */
export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
}

/** What running a tool produced: the text the model reads, and whether it is an error. */
interface ToolOutcome {
  readonly isError: boolean
  readonly content: string
  /** True when the tool stopped because the abort signal fired (Ctrl+C). */
  readonly aborted?: boolean
}

/** The tools of one workspace, ready to be offered to a model and run. */
export interface WorkspaceTools {
  /** Real path of the workspace directory. */
  readonly workspace: string
  /** Definitions to send to the model, in a stable order. */
  readonly definitions: readonly ToolDefinition[]
  /**
   * Runs the tool `name` with the model's raw JSON argument text. Never throws for a bad
   * call: unknown tools, bad arguments and refused paths are `isError` outcomes.
   */
  run(name: string, argumentsText: string, signal?: AbortSignal): Promise<ToolOutcome>
}

/** Options of {@link createWorkspaceTools}. */
export interface WorkspaceToolsOptions {
  /** The directory the tools are confined to; must exist. */
  readonly workspace: string
  /** Paths inside the workspace the tools must refuse (the session root); need not exist. */
  readonly protectedPaths?: readonly string[]
  /** Default `run_command` timeout in milliseconds (default 10 000; the model may ask for up to 120 000). */
  readonly commandTimeoutMs?: number
  /** Cap on the captured stdout+stderr of `run_command`, in bytes (default 16 KiB). */
  readonly maxOutputBytes?: number
  /** Cap on the bytes `read_file` returns (default 64 KiB). */
  readonly maxReadBytes?: number
  /** Cap on the bytes `write_file` accepts (default 1 MiB). */
  readonly maxWriteBytes?: number
}

/** Names of the tools that never change anything: after an unknown outcome they can simply be retried. */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set(['read_file', 'list_dir'])

const MAX_LIST_ENTRIES = 500
const MAX_COMMAND_TIMEOUT_MS = 120_000

const readFileArgumentsSchema = z.object({ path: z.string() })
const writeFileArgumentsSchema = z.object({ path: z.string(), content: z.string() })
const listDirArgumentsSchema = z.object({ path: z.string().optional() })
const runCommandArgumentsSchema = z.object({
  command: z.string().min(1),
  cwd: z.string().optional(),
  timeoutMs: z.number().int().positive().optional(),
})

/** The four tool definitions, as sent to the model. */
export const TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'list_dir',
    description:
      'List the entries of a directory in the workspace (directories end with /, symlinks with @).',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Directory relative to the workspace; default "."' },
      },
      additionalProperties: false,
    },
  },
  {
    name: 'read_file',
    description: 'Read a UTF-8 text file in the workspace.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', description: 'File path relative to the workspace' } },
      required: ['path'],
      additionalProperties: false,
    },
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a UTF-8 text file in the workspace (parent directories are created).',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path relative to the workspace' },
        content: { type: 'string', description: 'The whole new content of the file' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'run_command',
    description:
      'Run a shell command (/bin/sh -c) with its working directory in the workspace; stdout and stderr are captured and capped, and the command is killed at its timeout.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The shell command line' },
        cwd: { type: 'string', description: 'Working directory relative to the workspace; default "."' },
        timeoutMs: { type: 'integer', description: 'Timeout in milliseconds (default 10000, max 120000)' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
]

function toolError(message: string): ToolOutcome {
  return { isError: true, content: message.startsWith('Error:') ? message : `Error: ${message}` }
}

const ABORTED: ToolOutcome = { isError: true, content: 'Error: aborted by the user', aborted: true }

function describeFsError(error: unknown, shownPath: string): ToolOutcome {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  if (code === 'ELOOP') return toolError(`${shownPath} is a symlink; refused.`)
  if (code === 'ENOENT') return toolError(`${shownPath} does not exist in the workspace.`)
  if (code === 'EISDIR') return toolError(`${shownPath} is a directory, expected a file.`)
  if (code === 'ENOTDIR') return toolError(`a component of ${shownPath} is not a directory.`)
  if (code === 'EACCES' || code === 'EPERM') return toolError(`permission denied on ${shownPath}.`)
  return toolError(`could not access ${shownPath}: ${typeof code === 'string' ? code : 'unknown error'}.`)
}

function parseArguments<TSchema extends z.ZodType>(
  schema: TSchema,
  toolName: string,
  argumentsText: string,
): { ok: true; value: z.infer<TSchema> } | { ok: false; outcome: ToolOutcome } {
  let raw: unknown
  try {
    raw = JSON.parse(argumentsText === '' ? '{}' : argumentsText)
  } catch {
    return { ok: false, outcome: toolError(`the arguments of ${toolName} are not valid JSON.`) }
  }
  const parsed = schema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue === undefined || issue.path.length === 0 ? 'arguments' : issue.path.join('.')
    return {
      ok: false,
      outcome: toolError(`bad arguments for ${toolName}: ${where}: ${issue?.message ?? 'invalid'}.`),
    }
  }
  return { ok: true, value: parsed.data }
}

/**
 * Creates the four tools of mini-agent (`list_dir`, `read_file`, `write_file`,
 * `run_command`), confined to one workspace directory.
 *
 * **Contract**
 * 1. Every path argument is resolved with {@link resolveInWorkspace}: a path whose real path
 *    (after following every symlink) is outside the workspace, or inside a protected path,
 *    is refused with an `isError` outcome and nothing is read, written or run.
 * 2. Files are opened by their real path with `O_NOFOLLOW`, so a symlink swapped in after
 *    the check is refused rather than followed.
 * 3. `run_command` runs `/bin/sh -c` in its own process group with its working directory
 *    inside the workspace and a minimal environment (no API keys); it is killed (the whole
 *    group, SIGKILL) at its timeout or when the abort signal fires. Its output is capped.
 *    The command itself is not sandboxed: a shell command can name any path.
 *
 * @param options - The workspace and the limits.
 * @returns The tools, bound to the workspace's real path.
 * @throws {@link MiniAgentError} `WORKSPACE_INVALID` when the workspace is not an existing directory.
 */
export async function createWorkspaceTools(options: WorkspaceToolsOptions): Promise<WorkspaceTools> {
  let workspace: string
  try {
    workspace = await realpath(options.workspace)
    if (!(await stat(workspace)).isDirectory()) throw new Error('not a directory')
  } catch (error) {
    throw new MiniAgentError({
      code: 'WORKSPACE_INVALID',
      message: `The workspace ${JSON.stringify(options.workspace)} is not an existing directory.`,
      cause: error,
    })
  }
  const protectedPaths: string[] = []
  for (const protectedPath of options.protectedPaths ?? []) {
    const resolved = await realPathAllowingMissing(path.resolve(protectedPath))
    if (resolved !== undefined) protectedPaths.push(resolved.realPath)
  }
  const limits = {
    commandTimeoutMs: options.commandTimeoutMs ?? 10_000,
    maxOutputBytes: options.maxOutputBytes ?? 16 * 1024,
    maxReadBytes: options.maxReadBytes ?? 64 * 1024,
    maxWriteBytes: options.maxWriteBytes ?? 1024 * 1024,
  }
  const resolve = (input: string, mustExist: boolean) =>
    resolveInWorkspace(input, { workspace, protectedPaths, mustExist })

  async function readFileTool(argumentsText: string): Promise<ToolOutcome> {
    const parsed = parseArguments(readFileArgumentsSchema, 'read_file', argumentsText)
    if (!parsed.ok) return parsed.outcome
    const resolved = await resolve(parsed.value.path, true)
    if (!resolved.ok) return { isError: true, content: resolved.message }
    const shown = JSON.stringify(resolved.relative)
    try {
      const handle = await open(resolved.realPath, constants.O_RDONLY | constants.O_NOFOLLOW)
      try {
        const info = await handle.stat()
        if (!info.isFile()) return toolError(`${shown} is not a regular file.`)
        const length = Math.min(info.size, limits.maxReadBytes)
        const buffer = Buffer.alloc(length)
        const { bytesRead } = await handle.read(buffer, 0, length, 0)
        const text = buffer.subarray(0, bytesRead).toString('utf8')
        const note = info.size > bytesRead ? `\n[truncated: showed ${bytesRead} of ${info.size} bytes]` : ''
        return { isError: false, content: text + note }
      } finally {
        await handle.close()
      }
    } catch (error) {
      return describeFsError(error, shown)
    }
  }

  async function writeFileTool(argumentsText: string): Promise<ToolOutcome> {
    const parsed = parseArguments(writeFileArgumentsSchema, 'write_file', argumentsText)
    if (!parsed.ok) return parsed.outcome
    const bytes = Buffer.from(parsed.value.content, 'utf8')
    if (bytes.length > limits.maxWriteBytes) {
      return toolError(
        `the content is ${bytes.length} bytes, more than the ${limits.maxWriteBytes} bytes allowed.`,
      )
    }
    const resolved = await resolve(parsed.value.path, false)
    if (!resolved.ok) return { isError: true, content: resolved.message }
    const shown = JSON.stringify(resolved.relative)
    if (resolved.realPath === workspace) return toolError('the workspace directory itself is not a file.')
    try {
      await mkdir(path.dirname(resolved.realPath), { recursive: true })
      const handle = await open(
        resolved.realPath,
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
        0o644,
      )
      try {
        await handle.writeFile(bytes)
      } finally {
        await handle.close()
      }
      return { isError: false, content: `Wrote ${bytes.length} bytes to ${shown}.` }
    } catch (error) {
      return describeFsError(error, shown)
    }
  }

  async function listDirTool(argumentsText: string): Promise<ToolOutcome> {
    const parsed = parseArguments(listDirArgumentsSchema, 'list_dir', argumentsText)
    if (!parsed.ok) return parsed.outcome
    const resolved = await resolve(parsed.value.path ?? '.', true)
    if (!resolved.ok) return { isError: true, content: resolved.message }
    const shown = JSON.stringify(resolved.relative)
    try {
      if (!(await lstat(resolved.realPath)).isDirectory()) return toolError(`${shown} is not a directory.`)
      const entries = await readdir(resolved.realPath, { withFileTypes: true })
      const names = entries
        .filter((entry) => {
          const full = path.join(resolved.realPath, entry.name)
          return !protectedPaths.some((protectedPath) => full === protectedPath)
        })
        .map((entry) => entry.name + (entry.isDirectory() ? '/' : entry.isSymbolicLink() ? '@' : ''))
        .sort()
      const shownNames = names.slice(0, MAX_LIST_ENTRIES)
      const more =
        names.length > shownNames.length ? `\n[${names.length - shownNames.length} more entries]` : ''
      return {
        isError: false,
        content: shownNames.length === 0 ? '(empty directory)' : shownNames.join('\n') + more,
      }
    } catch (error) {
      return describeFsError(error, shown)
    }
  }

  async function runCommandTool(
    argumentsText: string,
    signal: AbortSignal | undefined,
  ): Promise<ToolOutcome> {
    const parsed = parseArguments(runCommandArgumentsSchema, 'run_command', argumentsText)
    if (!parsed.ok) return parsed.outcome
    const resolved = await resolve(parsed.value.cwd ?? '.', true)
    if (!resolved.ok) return { isError: true, content: resolved.message }
    // Aborted while the cwd was resolved: the command is not started at all.
    if (signal?.aborted === true) return ABORTED
    const timeoutMs = Math.min(parsed.value.timeoutMs ?? limits.commandTimeoutMs, MAX_COMMAND_TIMEOUT_MS)
    return runShellCommand({
      command: parsed.value.command,
      cwd: resolved.realPath,
      timeoutMs,
      maxOutputBytes: limits.maxOutputBytes,
      signal,
    })
  }

  return {
    workspace,
    definitions: TOOL_DEFINITIONS,
    async run(name, argumentsText, signal) {
      if (signal?.aborted === true) return ABORTED
      switch (name) {
        case 'read_file':
          return readFileTool(argumentsText)
        case 'write_file':
          return writeFileTool(argumentsText)
        case 'list_dir':
          return listDirTool(argumentsText)
        case 'run_command':
          return runCommandTool(argumentsText, signal)
        default:
          return toolError(`there is no tool named ${JSON.stringify(name)}.`)
      }
    },
  }
}

/** Options of {@link runShellCommand}. */
interface ShellCommandOptions {
  readonly command: string
  readonly cwd: string
  readonly timeoutMs: number
  readonly maxOutputBytes: number
  readonly signal: AbortSignal | undefined
}

function runShellCommand(options: ShellCommandOptions): Promise<ToolOutcome> {
  return new Promise((resolvePromise) => {
    const child = spawn('/bin/sh', ['-c', options.command], {
      cwd: options.cwd,
      detached: true, // own process group: a timeout or an abort kills the whole pipeline
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: options.cwd, LANG: 'C.UTF-8' },
    })
    const chunks: Buffer[] = []
    let captured = 0
    let dropped = 0
    const capture = (chunk: Buffer): void => {
      const room = options.maxOutputBytes - captured
      if (room > 0) {
        const kept = chunk.subarray(0, room)
        chunks.push(kept)
        captured += kept.length
      }
      dropped += Math.max(0, chunk.length - Math.max(room, 0))
    }
    child.stdout.on('data', capture)
    child.stderr.on('data', capture)
    let stopReason: 'timeout' | 'aborted' | undefined
    const killGroup = (): void => {
      if (child.pid === undefined) return
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // the group is already gone
      }
    }
    const timer = setTimeout(() => {
      stopReason = 'timeout'
      killGroup()
    }, options.timeoutMs)
    const onAbort = (): void => {
      stopReason ??= 'aborted'
      killGroup()
    }
    options.signal?.addEventListener('abort', onAbort, { once: true })
    // An abort that fired before the listener was added would otherwise be missed.
    if (options.signal?.aborted === true) onAbort()
    const finish = (outcome: ToolOutcome): void => {
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      resolvePromise(outcome)
    }
    child.on('error', (error) => {
      finish(toolError(`could not start the command: ${error.message}.`))
    })
    child.on('close', (exitCode, signalName) => {
      if (stopReason === 'aborted') {
        finish(ABORTED)
        return
      }
      const output = Buffer.concat(chunks).toString('utf8')
      const capNote = dropped > 0 ? `\n[output capped: ${dropped} more bytes dropped]` : ''
      const body = output + capNote
      if (stopReason === 'timeout') {
        finish(toolError(`the command timed out after ${options.timeoutMs} ms and was killed.\n${body}`))
        return
      }
      const status = exitCode === null ? `killed by ${signalName ?? 'a signal'}` : `exit code ${exitCode}`
      finish({ isError: exitCode !== 0, content: `${status}\n${body}` })
    })
  })
}
