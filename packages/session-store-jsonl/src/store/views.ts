import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'

import { assertSessionId } from '../session-id.ts'
import { summarizeOlderGeneration } from '../store-generations.ts'
import { locateSessionLog } from '../zstd-session.ts'
import { checkFollowOptions, followSession } from '../follow-session.ts'
import type { FollowedLog, FollowOptions } from '../follow-session.ts'
import { listSessionFiles } from '../session-files.ts'
import type { SessionFiles, SessionHeaderRead } from '../session-files.ts'
import { checkSessionDirectory, isRefusal } from './context.ts'
import type { StoreContext } from './context.ts'
import { openLog, peekHeader } from './log-access.ts'
import { generationContext, olderGeneration } from './older-generation.ts'
import { readEvents } from './read.ts'

/** The log a read opens now: an older generation, or the v4 log in whichever encoding it has. */
async function currentLog(
  ctx: StoreContext,
  id: string,
): Promise<FollowedLog & { readonly directory: string; readonly name: string }> {
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    const name = older.source.file
    return {
      directory: older.directory,
      name,
      path: join(older.directory, name),
      file: `${id}/${name}`,
      encoding: older.source.encoding,
      version: older.source.version,
    }
  }
  const directory = await checkSessionDirectory(ctx, id, { write: false })
  const log = await locateSessionLog({
    fs: ctx.fs,
    directory,
    id,
    mode: 'read',
    limits: ctx.limits,
    logger: ctx.logger,
  })
  return {
    directory,
    name: log.name,
    path: join(directory, log.name),
    file: log.file,
    encoding: log.encoding,
    version: SESSION_FORMAT_VERSION,
  }
}

export async function sessionFiles(ctx: StoreContext, id: string): Promise<SessionFiles> {
  assertSessionId(id)
  const log = await currentLog(ctx, id)
  return listSessionFiles(ctx.fs, {
    directory: log.directory,
    id,
    currentName: log.name,
    version: log.version,
    encoding: log.encoding,
  })
}

export async function readHeader(ctx: StoreContext, id: string): Promise<SessionHeaderRead> {
  assertSessionId(id)
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    const summary = await summarizeOlderGeneration(generationContext(ctx), {
      directory: older.directory,
      id,
      generation: older.source,
    })
    return {
      id,
      header: summary.header,
      file: summary.file,
      version: summary.version,
      encoding: older.source.encoding,
    }
  }
  const { handle, log, adapter } = await openLog(ctx, id, { write: false })
  try {
    const outcome = await peekHeader(ctx, { handle, adapter, id })
    if (outcome.damage !== null && isRefusal(outcome.damage)) throw outcome.damage
    return {
      id,
      header: outcome.header,
      file: log.file,
      version: SESSION_FORMAT_VERSION,
      encoding: log.encoding,
    }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

export function follow(
  ctx: StoreContext,
  id: string,
  options: FollowOptions = {},
): AsyncIterable<LoggedEvent> {
  assertSessionId(id)
  const checked = checkFollowOptions(options)
  return followSession(
    {
      fs: ctx.fs,
      limits: ctx.limits,
      registry: ctx.registry,
      locate: () => currentLog(ctx, id),
      readEvents: (fromSeq) => readEvents(ctx, id, { fromSeq }),
    },
    { ...checked, ...(options.signal === undefined ? {} : { signal: options.signal }) },
  )
}
