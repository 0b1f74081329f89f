/**
 * File edits as diffs, for the transcripts: Claude Code's `Edit`, `MultiEdit` and `Write`
 * calls (line diffs by the `diff` library) and Codex's `apply_patch` (its patch envelope,
 * already a diff, split into lines). Pure: arguments in, lines out.
 */
import { diffLines } from 'diff'

/** One line of a diff as a transcript shows it. */
export interface DiffLine {
  /** `file` a file's header, `hunk` a hunk or elision line, `add` / `del` / `ctx` its lines. */
  readonly kind: 'file' | 'hunk' | 'add' | 'del' | 'ctx'
  readonly text: string
}

/** Unchanged lines kept around each change; longer unchanged runs become one `hunk` line. */
const CONTEXT_LINES = 3

/**
 * Most edit steps the line diff may take (the `diff` library's `maxEditLength`), and most
 * lines of both sides it is tried on: beyond either the old text is shown removed and the
 * new one added, whole. Deterministic bounds, not a timer: the page is the same on any
 * machine, and a diff costs at most about lines x steps.
 */
const MAX_EDIT_LENGTH = 500
const MAX_DIFF_LINES = 2_000

function linesOf(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines
}

/** The diff of one replacement, with context trimmed to {@link CONTEXT_LINES}. */
function replacement(before: string, after: string): DiffLine[] {
  const oldLines = linesOf(before)
  const newLines = linesOf(after)
  const changes =
    oldLines.length + newLines.length > MAX_DIFF_LINES
      ? undefined
      : diffLines(before, after, { maxEditLength: MAX_EDIT_LENGTH })
  if (changes === undefined) {
    return [
      ...oldLines.map((text): DiffLine => ({ kind: 'del', text })),
      ...newLines.map((text): DiffLine => ({ kind: 'add', text })),
    ]
  }
  const out: DiffLine[] = []
  changes.forEach((change, index) => {
    const lines = linesOf(change.value)
    if (change.added || change.removed) {
      for (const text of lines) out.push({ kind: change.added ? 'add' : 'del', text })
      return
    }
    const first = index === 0
    const last = index === changes.length - 1
    const head = first ? 0 : CONTEXT_LINES
    const tail = last ? 0 : CONTEXT_LINES
    if (lines.length <= head + tail + 1) {
      for (const text of lines) out.push({ kind: 'ctx', text })
      return
    }
    for (const text of lines.slice(0, head)) out.push({ kind: 'ctx', text })
    out.push({ kind: 'hunk', text: `… ${lines.length - head - tail} unchanged line(s)` })
    for (const text of lines.slice(lines.length - tail)) out.push({ kind: 'ctx', text })
  })
  return out
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null
  } catch {
    return null
  }
}

/** Codex's patch envelope (`*** Begin Patch` ... `*** End Patch`) as diff lines. */
function patchLines(patch: string): DiffLine[] {
  const out: DiffLine[] = []
  for (const line of linesOf(patch)) {
    if (line === '*** Begin Patch' || line === '*** End Patch' || line === '*** End of File') continue
    if (line.startsWith('*** ')) out.push({ kind: 'file', text: line.slice(4) })
    else if (line.startsWith('@@')) out.push({ kind: 'hunk', text: line })
    else if (line.startsWith('+')) out.push({ kind: 'add', text: line.slice(1) })
    else if (line.startsWith('-')) out.push({ kind: 'del', text: line.slice(1) })
    else out.push({ kind: 'ctx', text: line.startsWith(' ') ? line.slice(1) : line })
  }
  return out
}

/** The patch text of an `apply_patch` call: raw (a custom tool), `{input}`, or a shell command. */
function patchOf(name: string, args: string): string | null {
  const trimmed = args.trimStart()
  if (name === 'apply_patch' && trimmed.startsWith('*** Begin Patch')) return args
  const value = parseObject(args)
  if (value === null) return null
  if (name === 'apply_patch') return str(value['input']) ?? str(value['patch']) ?? null
  // `shell` / `local_shell` with ["apply_patch", "<patch>"].
  const command = value['command'] ?? (value['action'] as Record<string, unknown> | undefined)?.['command']
  if (Array.isArray(command) && command[0] === 'apply_patch' && typeof command[1] === 'string') {
    return command[1]
  }
  return null
}

/**
 * The diff a tool call's arguments describe, or null when the call is not a file edit (or
 * its arguments are not the shape the tool takes).
 *
 * @param name - The tool name (`Edit`, `MultiEdit`, `Write`, `apply_patch`, `shell`...).
 * @param args - The call's arguments, as logged (a JSON text, or a raw patch).
 * @returns The lines to show, the first one naming the file.
 */
export function editDiff(name: string, args: string): readonly DiffLine[] | null {
  if (name === 'Edit' || name === 'MultiEdit' || name === 'Write') {
    const value = parseObject(args)
    const path = value === null ? undefined : str(value['file_path'])
    if (value === null || path === undefined) return null
    if (name === 'Write') {
      const content = str(value['content'])
      if (content === undefined) return null
      return [
        { kind: 'file', text: `Write ${path}` },
        ...linesOf(content).map((text): DiffLine => ({ kind: 'add', text })),
      ]
    }
    const edits =
      name === 'Edit' ? [value] : Array.isArray(value['edits']) ? (value['edits'] as unknown[]) : null
    if (edits === null) return null
    const out: DiffLine[] = [{ kind: 'file', text: `${name} ${path}` }]
    for (const [index, edit] of edits.entries()) {
      const record = typeof edit === 'object' && edit !== null ? (edit as Record<string, unknown>) : {}
      const before = str(record['old_string'])
      const after = str(record['new_string'])
      if (before === undefined || after === undefined) return null
      if (edits.length > 1 || record['replace_all'] === true) {
        out.push({
          kind: 'hunk',
          text: `edit ${index + 1} of ${edits.length}${record['replace_all'] === true ? ' (every occurrence)' : ''}`,
        })
      }
      out.push(...replacement(before, after))
    }
    return out
  }
  const patch = patchOf(name, args)
  return patch === null ? null : patchLines(patch)
}
