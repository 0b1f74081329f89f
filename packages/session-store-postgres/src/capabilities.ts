import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { CheckpointRecord, ServerForkRequest, WriterLease } from '@agent-ledger/session-store'

import type { Db } from './db.ts'
import * as sql from './sql.ts'

/** Server-side fork: the child row, the parent's prefix and the child's own lines in ONE statement. */
export async function forkSession(db: Db, request: ServerForkRequest): Promise<void> {
  const child = request.child
  const action = `fork session ${request.parentId} at seq ${request.boundarySeq} into ${child.id}`
  const context = db.context(action, child.id)
  const result = await db.query<{ parent_found: number; child_exists: number; created: number }>(
    context,
    sql.FORK_SQL,
    [
      request.parentId,
      request.boundarySeq,
      request.boundaryCrc,
      child.id,
      child.headerLine,
      child.header.cwd ?? null,
      child.lines,
      child.lastCrc ?? request.boundaryCrc,
    ],
  )
  const row = result.rows[0]
  if (row?.created === 1) return
  if (row?.parent_found !== 1) throw db.notFound(action, request.parentId)
  if (row.child_exists === 1) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_EXISTS,
      message: `${action}: session ${child.id} already exists; nothing was written`,
      sessionId: child.id,
    })
  }
  const found = (
    await db.query<{ crc: string }>(context, sql.LINE_CRC_SQL, [request.parentId, request.boundarySeq])
  ).rows[0]
  throw new SessionStoreError({
    code: SessionStoreErrorCode.CONFLICT,
    message:
      found === undefined
        ? `${action}: the parent has no event at seq ${request.boundarySeq}; nothing was written`
        : `${action}: the parent's line at seq ${request.boundarySeq} has checksum ${found.crc}, expected ${request.boundaryCrc}; nothing was written`,
    sessionId: request.parentId,
    details: { expected: request.boundaryCrc, found: found?.crc ?? null },
  })
}

const CRC = /^[0-9a-f]{8}$/

/** The stored checkpoint, or null (none, or a row that does not have the expected shape). */
export async function readCheckpoint(db: Db, id: string): Promise<CheckpointRecord | null> {
  const row = (
    await db.query<{
      seq: string
      event_crc: string
      header_crc: string
      registry_digest: string
      body: Buffer
    }>(db.context(`read the checkpoint of session ${id}`, id), sql.GET_CHECKPOINT_SQL, [id])
  ).rows[0]
  if (
    row === undefined ||
    !CRC.test(row.event_crc) ||
    !CRC.test(row.header_crc) ||
    !Buffer.isBuffer(row.body)
  ) {
    return null
  }
  return {
    seq: Number(row.seq),
    eventCrc: row.event_crc,
    headerCrc: row.header_crc,
    registryDigest: row.registry_digest,
    body: new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength),
  }
}

/** Stores a checkpoint while `lease` holds (FENCED otherwise); `seq` must be below the head. */
export async function writeCheckpoint(
  db: Db,
  request: { readonly lease: WriterLease; readonly record: CheckpointRecord },
): Promise<void> {
  const { lease, record } = request
  const action = `write the checkpoint of session ${lease.sessionId} at seq ${record.seq}`
  if (
    !Number.isSafeInteger(record.seq) ||
    record.seq < 0 ||
    !CRC.test(record.eventCrc) ||
    !CRC.test(record.headerCrc)
  ) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      message: `${action}: expected a non-negative seq and 8-hex-digit checksums, found seq ${record.seq}, eventCrc ${JSON.stringify(record.eventCrc)}, headerCrc ${JSON.stringify(record.headerCrc)}`,
      sessionId: lease.sessionId,
      details: { option: 'record' },
    })
  }
  const result = await db.query(db.context(action, lease.sessionId), sql.PUT_CHECKPOINT_SQL, [
    lease.sessionId,
    lease.epoch,
    lease.owner,
    record.seq,
    record.eventCrc,
    record.headerCrc,
    record.registryDigest,
    Buffer.from(record.body.buffer, record.body.byteOffset, record.body.byteLength),
  ])
  if (result.rowCount === 1) return
  const error = await db.explainRefusal(action, lease)
  if (error.code !== SessionStoreErrorCode.CONFLICT) throw error
  throw new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `${action}: the session has ${String(error.details.found)} events, so seq ${record.seq} is not durable`,
    sessionId: lease.sessionId,
    details: { option: 'seq', found: error.details.found },
  })
}
