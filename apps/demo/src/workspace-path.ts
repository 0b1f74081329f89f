import { lstat, realpath } from 'node:fs/promises'
import path from 'node:path'

/** Why {@link resolveInWorkspace} refused a path. */
type PathRefusal = 'empty' | 'nul-byte' | 'outside-workspace' | 'dangling-symlink' | 'protected' | 'not-found'

/** What {@link resolveInWorkspace} found: the real path inside the workspace, or why it refused. */
export type PathResolution =
  | { readonly ok: true; readonly realPath: string; readonly relative: string; readonly exists: boolean }
  | { readonly ok: false; readonly reason: PathRefusal; readonly message: string }

/** Options of {@link resolveInWorkspace}. */
export interface ResolveOptions {
  /** Real path (no symlinks) of the workspace directory. */
  readonly workspace: string
  /** Real paths the tools must never touch even though they are inside the workspace (e.g. the session root). */
  readonly protectedPaths?: readonly string[]
  /** Refuse a path that does not exist yet (reads, listings). */
  readonly mustExist?: boolean
}

/**
 * True when `candidate` is `root` or below it. Both must be absolute and normalized.
 *
 * @param root - An absolute, normalized directory path.
 * @param candidate - An absolute, normalized path.
 * @returns Whether `candidate` is inside `root`.
 */
function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true
  const prefix = root.endsWith(path.sep) ? root : root + path.sep
  return candidate.startsWith(prefix)
}

function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT'
}

/**
 * Resolves the real path of `target` without requiring it to exist: the nearest existing
 * ancestor is resolved with `realpath` (following every symlink), the missing components are
 * appended. A component that exists only as a dangling symlink makes it return `undefined`,
 * because writing through it would create a file wherever the link points.
 *
 * @param target - An absolute path.
 * @returns The real path and whether `target` itself exists, or `undefined` for a dangling symlink.
 */
export async function realPathAllowingMissing(
  target: string,
): Promise<{ realPath: string; exists: boolean } | undefined> {
  const missing: string[] = []
  let current = target
  for (;;) {
    try {
      const real = await realpath(current)
      return {
        realPath: missing.length === 0 ? real : path.join(real, ...missing.reverse()),
        exists: missing.length === 0,
      }
    } catch (error) {
      if (!isNotFound(error)) throw error
      try {
        await lstat(current)
        return undefined // it exists as a name, but realpath cannot follow it: a dangling symlink
      } catch (lstatError) {
        if (!isNotFound(lstatError)) throw lstatError
      }
      const parent = path.dirname(current)
      if (parent === current) return { realPath: target, exists: false }
      missing.push(path.basename(current))
      current = parent
    }
  }
}

/**
 * Resolves a path given by the model against the workspace and refuses anything that would
 * leave it: `..` segments, absolute paths elsewhere, symlinks (at any component) pointing
 * out, dangling symlinks, NUL bytes, and the protected paths (the session log must never be
 * reachable through the tools). The check is on the real path, after every symlink is
 * followed; the tools then open that real path with `O_NOFOLLOW`.
 *
 * @param input - The path the model asked for, relative to the workspace or absolute.
 * @param options - The workspace's real path, protected paths, and whether the target must exist.
 * @returns The real path and its workspace-relative form, or the refusal with a one-sentence message.
 */
export async function resolveInWorkspace(input: string, options: ResolveOptions): Promise<PathResolution> {
  if (input.length === 0) {
    return {
      ok: false,
      reason: 'empty',
      message: 'Error: the path is empty; expected a path inside the workspace.',
    }
  }
  if (input.includes('\0')) {
    return { ok: false, reason: 'nul-byte', message: 'Error: the path contains a NUL byte; refused.' }
  }
  const shown = JSON.stringify(input)
  const outside: PathResolution = {
    ok: false,
    reason: 'outside-workspace',
    message: `Error: the path ${shown} resolves outside the workspace; refused (tools only reach files inside the workspace).`,
  }
  const lexical = path.resolve(options.workspace, input)
  if (!isInside(options.workspace, lexical)) return outside
  const resolved = await realPathAllowingMissing(lexical)
  if (resolved === undefined) {
    return {
      ok: false,
      reason: 'dangling-symlink',
      message: `Error: the path ${shown} goes through a symlink whose target does not exist; refused.`,
    }
  }
  if (!isInside(options.workspace, resolved.realPath)) return outside
  for (const protectedPath of options.protectedPaths ?? []) {
    if (isInside(protectedPath, resolved.realPath)) {
      return {
        ok: false,
        reason: 'protected',
        message: `Error: the path ${shown} is inside the session log directory, which tools may not touch; refused.`,
      }
    }
  }
  if (options.mustExist === true && !resolved.exists) {
    return { ok: false, reason: 'not-found', message: `Error: ${shown} does not exist in the workspace.` }
  }
  const relative = path.relative(options.workspace, resolved.realPath)
  return {
    ok: true,
    realPath: resolved.realPath,
    relative: relative === '' ? '.' : relative,
    exists: resolved.exists,
  }
}
