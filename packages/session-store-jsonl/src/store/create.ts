import { Readable } from 'node:stream'

import type { LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { assertSessionId } from '../session-id.ts'
import type { SessionWriter } from '../session-writer.ts'
import { linesFacts } from '../checkpoint-writer.ts'
import type { LogEncoding } from '../zstd-log-writer.ts'
import { logAdapter } from '../log-adapter.ts'
import { ensureRoot, ensureSessionDirectory, checkedEncoding } from './context.ts'
import type { StoreContext } from './context.ts'
import { buildHeader, encodeSeed, assertSeedMatchesHeader } from './header-seed.ts'
import { publishNewSession } from './publish-new.ts'
import { checkpointWriter, newWriter, repairAndReturn } from './open-writer.ts'

/**
 * `store.create` (and a fork, which is a create with a seed): validates the header and the
 * seed, publishes the log by link, then opens it for write with loop-repair's closers.
 *
 * @param operation - `create`, or `fork` (names the failure code: `CREATE_FAILED`, `FORK_FAILED`).
 */
export async function create(
  ctx: StoreContext,
  request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    readonly seed?: readonly LoggedEvent[]
    readonly encoding?: LogEncoding
  },
  operation: 'create' | 'fork' = 'create',
): Promise<SessionWriter> {
  const id = assertSessionId(request.id)
  const encoding = checkedEncoding(request.encoding ?? ctx.encoding)
  const header = buildHeader(ctx, id, request.header ?? {})
  const projection = createProjection({ registry: ctx.registry })
  const seedEvents: LoggedEvent[] = []
  const seedLines = encodeSeed(ctx, request.seed ?? [], { id, projection, events: seedEvents })
  assertSeedMatchesHeader(id, header, seedEvents)
  const adapter = await logAdapter(id, encoding, ctx.limits)
  await ensureRoot(ctx, true)
  const directory = await ensureSessionDirectory(ctx, id)
  const published = await publishNewSession(ctx, {
    id,
    directory,
    operation,
    header,
    adapter,
    body: () => Readable.from(seedLines) as AsyncIterable<Buffer>,
    expected: { lines: seedLines.length, lastLine: seedLines.at(-1) ?? null },
  })
  const writer = newWriter(ctx, {
    id,
    adapter,
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
