/**
 * The scratch layout of the mini-agent tests: a temp `base` holding `sessions/` (the JSONL
 * root) and `workspace/` with one `notes.md`, and the events of a session read back.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'

/** A scratch base: `root` (sessions, not created yet) and `workspace` (created, holding notes.md). */
export interface NotesWorkspace {
  readonly base: string
  readonly root: string
  readonly workspace: string
}

/** Makes a fresh scratch base under the OS temp dir (the caller removes `base`). */
export async function notesWorkspace(prefix: string): Promise<NotesWorkspace> {
  const base = await mkdtemp(path.join(os.tmpdir(), prefix))
  const workspace = path.join(base, 'workspace')
  await mkdir(workspace)
  await writeFile(path.join(workspace, 'notes.md'), '# Notes\nship on Friday\n')
  return { base, root: path.join(base, 'sessions'), workspace }
}

/** Every event of session `id` under the JSONL root `root`. */
export async function readAll(root: string, id: string): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = []
  for await (const event of createJsonlStore({ root }).readEvents(id)) events.push(event)
  return events
}
