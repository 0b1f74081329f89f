/**
 * Transcript entries shaped like the Claude Code CLI's (what the SDK mirrors), and a store
 * kind opened with a project key unique to the run (the PostgreSQL server is shared).
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk'

/** A user entry of a transcript, `n` giving its uuid and text. */
export function userEntry(sessionId: string, n: number): SessionStoreEntry {
  return {
    type: 'user',
    uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    parentUuid: n === 1 ? null : `00000000-0000-4000-8000-${String(n - 1).padStart(12, '0')}`,
    sessionId,
    timestamp: `2026-12-01T10:00:${String(n % 60).padStart(2, '0')}.000Z`,
    isSidechain: false,
    message: {
      role: 'user',
      content: [{ type: 'text', text: `prompt ${n} — ünïcödé, "quotes", \\ and 🚀` }],
    },
    nested: { deep: { list: [1, 2.5, -3e-7, true, null, { k: 'v' }] } },
  }
}

/** An entry without a uuid (a title, a mode marker): never deduplicated. */
export function titleEntry(sessionId: string, title: string): SessionStoreEntry {
  return { type: 'custom-title', customTitle: title, sessionId }
}

/** Entries per batch of the SIGKILL child (test/fixtures/append-child.ts). */
export const BATCH_SIZE = 4

/** A big transcript entry (about 16 KiB), number `n` of a chain: what the SIGKILL child appends. */
export function bigEntry(n: number): SessionStoreEntry {
  return {
    type: n % 2 === 0 ? 'user' : 'assistant',
    uuid: `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`,
    parentUuid: n === 0 ? null : `00000000-0000-4000-9000-${String(n - 1).padStart(12, '0')}`,
    sessionId: 'killed',
    message: { role: n % 2 === 0 ? 'user' : 'assistant', content: `${n} `.repeat(4_096).slice(0, 16_384) },
  }
}
