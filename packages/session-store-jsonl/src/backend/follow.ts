/**
 * Live tail for the JSONL backend: a follower waits on a watcher of the session directory
 * (`fs.watch`, inotify on Linux) and, in case the watcher misses an event or cannot start
 * (a network file system, an exhausted inotify budget), wakes up every `pollMs` anyway. A
 * wake-up may be spurious: the core reads the head again.
 */
import { watch } from 'node:fs'
import type { FSWatcher } from 'node:fs'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { SessionHead, SignalOptions } from '@agent-ledger/session-store'

/** What {@link waitForAppend} needs from the backend. */
export interface FollowContext {
  /** The session's current head. */
  readonly head: (id: string, options: SignalOptions) => Promise<SessionHead>
  /** The session directory (after the id check). */
  readonly directory: (id: string) => string
  /** Longest wait without a watcher event, in milliseconds. */
  readonly pollMs: number
}

/**
 * Resolves once session `id` may have moved past `nextSeq`.
 *
 * @param context - Head, directory and poll interval.
 * @param id - The session id.
 * @param options - The seq the follower waits past, and its signal.
 * @returns When to read again.
 * @throws {@link SessionStoreError} `ABORTED` when the signal fires; the head's errors.
 */
export async function waitForAppend(
  context: FollowContext,
  id: string,
  options: { readonly nextSeq: number } & SignalOptions,
): Promise<void> {
  const { signal } = options
  const head = await context.head(id, { signal })
  if (head.nextSeq > options.nextSeq) return
  await new Promise<void>((resolve, reject) => {
    let watcher: FSWatcher | undefined
    const pending: { timer?: ReturnType<typeof setTimeout> } = {}
    const finish = (error?: SessionStoreError): void => {
      watcher?.close()
      if (pending.timer !== undefined) clearTimeout(pending.timer)
      signal?.removeEventListener('abort', onAbort)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onAbort = (): void => {
      finish(
        new SessionStoreError({
          code: SessionStoreErrorCode.ABORTED,
          sessionId: id,
          message: `Following session ${id} was aborted.`,
          cause: signal?.reason,
        }),
      )
    }
    if (signal?.aborted === true) {
      onAbort()
      return
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      watcher = watch(context.directory(id), { persistent: false }, () => {
        finish()
      })
      watcher.on('error', () => {
        // The poll below still wakes the follower.
        watcher?.close()
      })
    } catch {
      watcher = undefined
    }
    // Not unref'd: a follower (`tail -f`) keeps the process alive while it waits.
    pending.timer = setTimeout(() => {
      finish()
    }, context.pollMs)
    // An append between the first head and the watcher's start: look once more.
    context.head(id, { signal }).then(
      (moved) => {
        if (moved.nextSeq > options.nextSeq) finish()
      },
      () => undefined,
    )
  })
}
