/**
 * Where a chaos session lives in the Claude Agent SDK: the SDK's key of its transcript. Pure:
 * the worker that runs the session and the driver that checks it derive the same key.
 */
import { createHash } from 'node:crypto'

/** The CLI's project key of a working directory: every character but [a-zA-Z0-9] becomes `-`. */
const PROJECT_KEY_MAX = 200

/**
 * The SDK key of a chaos session: the project key the CLI derives from `cwd` (a resolved
 * path), and a UUID (version 4 layout) from the SHA-256 of the chaos session id (the SDK wants
 * a UUID for `sessionId`).
 *
 * @param cwd - The CLI's working directory, resolved (`realpathSync`).
 * @param session - The chaos session id.
 * @returns The key.
 */
export function claudeKey(cwd: string, session: string): { projectKey: string; sessionId: string } {
  const projectKey = cwd.replace(/[^a-zA-Z0-9]/g, '-')
  if (projectKey.length > PROJECT_KEY_MAX)
    throw new Error(
      `claudeKey: expected a working directory of at most ${PROJECT_KEY_MAX} characters, found ${projectKey.length} (${cwd})`,
    )
  const hex = createHash('sha256').update(session).digest('hex')
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  const sessionId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
  return { projectKey, sessionId }
}
