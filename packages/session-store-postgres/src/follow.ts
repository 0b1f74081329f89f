import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { SignalOptions } from '@agent-ledger/session-store'
import pg from 'pg'

import { APPEND_CHANNEL } from './sql.ts'

interface Waiter {
  readonly id: string
  readonly nextSeq: number
  readonly wake: () => void
}

/**
 * One dedicated `LISTEN` connection per backend, shared by every follower. Appends send
 * `NOTIFY` in their own transaction (delivered on commit); a notification for a session
 * wakes its waiters whose `nextSeq` it passed. A lost listener connection wakes everyone
 * (a spurious wake-up: the core re-reads the head) and is re-opened by the next wait.
 */
export class AppendListener {
  private client: pg.Client | undefined
  private connecting: Promise<void> | undefined
  private readonly waiters = new Set<Waiter>()
  private closed = false
  private readonly config: pg.ClientConfig

  constructor(config: pg.ClientConfig) {
    this.config = config
  }

  /** Makes sure LISTEN is active; notifications from now on are seen. */
  async ready(): Promise<void> {
    if (this.closed) throw new Error('listener closed')
    if (this.client !== undefined) return
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined
    })
    await this.connecting
  }

  private async open(): Promise<void> {
    const client = new pg.Client(this.config)
    client.on('error', () => this.lost(client))
    client.on('end', () => this.lost(client))
    client.on('notification', (message) => {
      if (message.channel !== APPEND_CHANNEL || message.payload === undefined) return
      const space = message.payload.lastIndexOf(' ')
      const id = message.payload.slice(0, space)
      const nextSeq = Number(message.payload.slice(space + 1))
      for (const waiter of this.waiters) if (waiter.id === id && nextSeq > waiter.nextSeq) waiter.wake()
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${APPEND_CHANNEL}`)
    } catch (error) {
      client.removeAllListeners()
      client.on('error', () => undefined)
      await client.end().catch(() => undefined)
      throw error
    }
    this.client = client
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return
    this.client = undefined
    for (const waiter of this.waiters) waiter.wake()
  }

  /**
   * Registers a waiter, then runs `check` (a head read): resolves when `check` says the head
   * already moved, on a notification for `id` past `nextSeq`, or on a lost listener.
   */
  async wait(
    id: string,
    options: {
      readonly nextSeq: number
      readonly check: () => Promise<boolean>
      /** Wake up after this long anyway (a missed notification costs at most this much latency). */
      readonly pollMs: number
    } & SignalOptions,
  ): Promise<void> {
    const signal = options.signal
    if (signal?.aborted === true) throw aborted(id, signal.reason)
    await this.ready()
    let onAbort: (() => void) | undefined
    let waiter: Waiter | undefined
    const woken = new Promise<void>((resolve, reject) => {
      waiter = { id, nextSeq: options.nextSeq, wake: resolve }
      this.waiters.add(waiter)
      if (signal !== undefined) {
        onAbort = () => reject(aborted(id, signal.reason))
        // An abort while LISTEN was being set up fired no listener: honour it now.
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      }
    })
    woken.catch(() => undefined) // an abort during check() is rethrown by `await woken` or dropped after return
    const poll = setTimeout(() => waiter?.wake(), options.pollMs)
    try {
      if (await options.check()) return
      await woken
    } finally {
      clearTimeout(poll)
      if (waiter !== undefined) this.waiters.delete(waiter)
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
    }
  }

  /** Closes the LISTEN connection and wakes every waiter. */
  async close(): Promise<void> {
    this.closed = true
    const client = this.client
    this.client = undefined
    for (const waiter of this.waiters) waiter.wake()
    if (client !== undefined) await client.end().catch(() => undefined)
  }
}

function aborted(id: string, reason: unknown): SessionStoreError {
  return new SessionStoreError({
    code: SessionStoreErrorCode.ABORTED,
    message: `waiting for appends to session ${id}: aborted`,
    sessionId: id,
    cause: reason,
  })
}
