import type { LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { assertSessionId } from '../session-id.ts'
import type { SessionWriter } from '../session-writer.ts'
import { linesFacts } from '../checkpoint-writer.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { sessionLog, zstdCodecFor } from '../zstd-session.ts'
import { ensureRoot, ensureSessionDirectory, checkedEncoding } from './context.ts'
import type { StoreContext } from './context.ts'
import { buildHeader, encodeSeed, assertSeedMatchesHeader } from './header-seed.ts'
import { publish } from './publish-new.ts'
import { checkpointWriter, newWriter, repairAndReturn } from './open-writer.ts'

export async function create(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    readonly seed?: readonly LoggedEvent[]
    readonly encoding?: LogEncoding
  },
): Promise<SessionWriter> {
  const id = assertSessionId(request.id)
  const log = sessionLog(id, checkedEncoding(request.encoding ?? ctx.encoding))
  const header = buildHeader(ctx, id, request.header ?? {})
  const projection = createProjection({ registry: ctx.registry })
  const seedEvents: LoggedEvent[] = []
  const seedLines = encodeSeed(ctx, request.seed ?? [], { id, projection, events: seedEvents })
  assertSeedMatchesHeader(id, header, seedEvents)
  const codec = log.encoding === 'zstd' ? await zstdCodecFor(log.file) : undefined
  await ensureRoot(ctx, true)
  const directory = await ensureSessionDirectory(ctx, id)
  const published = await publish(ctx, {
    id,
    directory,
    kind: 'create',
    header,
    body: seedLines,
    log,
    codec,
  })
  const writer = newWriter(ctx, {
    id,
    log,
    codec,
    header,
    directory,
    handle: published.handle,
    lock: published.lock,
    projection,
    durableOffset: published.size,
    recovery: { tornTail: null, quarantineFile: null, repairs: [], headerMissing: false },
    checkpoints: checkpointWriter(ctx, {
      id,
      directory,
      handle: published.handle,
      header,
      ...linesFacts(seedLines, published.size, 0),
      coveredSeq: -1,
    }),
  })
  return repairAndReturn(ctx, writer)
}
