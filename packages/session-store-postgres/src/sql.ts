/**
 * Every statement the backend sends. Each write is ONE statement (one round trip, its own
 * implicit transaction): all or nothing, with the fencing checks inside the statement.
 */

/** The NOTIFY channel: payload `<session id> <new next_seq>`, sent on commit of an append. */
export const APPEND_CHANNEL = 'agent_ledger_append'

/** Server-side ISO-8601 (UTC, milliseconds) of a timestamptz expression. */
const iso = (expression: string): string =>
  `to_char(${expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The checksum (8 hex digits) at the end of a stored line: `...,"crc":"XXXXXXXX"}`. */
const lineCrc = (expression: string): string => `substr(${expression}, length(${expression}) - 9, 8)`

/**
 * Create: the session row and its seed lines in one statement.
 * $1 id, $2 header line, $3 parent, $4 cwd, $5 lines[], $6 last crc.
 * Returns `created` (0 when the id exists: nothing written) and `events`.
 */
export const CREATE_SQL = `
WITH s AS (
  INSERT INTO ledger_sessions (session_id, header_line, parent_session, cwd, next_seq, last_crc)
  VALUES ($1, $2, $3, $4, cardinality($5::text[]), $6)
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id),
e AS (
  INSERT INTO ledger_events (session_id, seq, line, writer_epoch)
  SELECT $1, t.o - 1, t.l, 0 FROM unnest($5::text[]) WITH ORDINALITY AS t(l, o)
   WHERE EXISTS (SELECT 1 FROM s)
  RETURNING 1)
SELECT (SELECT count(*) FROM s)::int AS created, (SELECT count(*) FROM e)::int AS events`

/**
 * Streamed create, step 1 (inside the create's transaction): the session row with an empty
 * head. $1 id, $2 header line, $3 parent, $4 cwd. 0 rows: the id exists.
 */
export const CREATE_STREAM_ROW_SQL = `
INSERT INTO ledger_sessions (session_id, header_line, parent_session, cwd, next_seq, last_crc)
VALUES ($1, $2, $3, $4, 0, NULL)
ON CONFLICT (session_id) DO NOTHING`

/** Streamed create, step 2 (per batch, same transaction): $1 id, $2 seq of the first line, $3 lines[]. */
export const CREATE_STREAM_LINES = {
  name: 'agent_ledger_create_stream_lines',
  text: `
INSERT INTO ledger_events (session_id, seq, line, writer_epoch)
SELECT $1, $2::bigint + t.o - 1, t.l, 0 FROM unnest($3::text[]) WITH ORDINALITY AS t(l, o)`,
}

/** Streamed create, step 3 (same transaction, then COMMIT): the head. $1 id, $2 next seq, $3 last crc. */
export const CREATE_STREAM_HEAD_SQL = `
UPDATE ledger_sessions SET next_seq = $2, last_crc = $3, updated_at = clock_timestamp() WHERE session_id = $1`

/**
 * Acquire: bump the epoch (fencing every earlier lease) when no live lease of another owner
 * is held, or with takeover. Waits for the row lock of an in-flight append, so the head it
 * returns is final. $1 id, $2 owner, $3 lease ms, $4 takeover.
 */
export const ACQUIRE_SQL = `
UPDATE ledger_sessions
   SET writer_epoch = writer_epoch + 1, writer_owner = $2, lease_ms = $3::integer,
       lease_until = clock_timestamp() + $3::integer * interval '1 millisecond'
 WHERE session_id = $1
   AND (writer_owner IS NULL OR lease_until <= clock_timestamp() OR writer_owner = $2 OR $4::boolean)
RETURNING writer_epoch::text AS epoch, next_seq::text AS next_seq, last_crc, last_batch,
          ${iso('lease_until')} AS expires_at, ${iso('updated_at')} AS updated_at`

/**
 * Append: head check + fencing + lines (+ NOTIFY when the session has a live follower) in
 * one statement. The UPDATE takes the session row lock, so concurrent appenders serialize;
 * under READ COMMITTED a blocked one re-checks `writer_epoch` and `next_seq` on the new row
 * version and matches nothing. NOTIFY is sent on commit, and only for a followed session:
 * it takes a database-wide lock held across the commit's WAL flush, which would otherwise
 * serialize every writer's commits (measured: half the throughput of 8 writers).
 * $1 id, $2 epoch, $3 expected seq, $4 the lines joined by `\n` (a line never holds one: the
 * backend refuses it), $5 last crc, $6 batch id, $7 owner, $8 line count. One text parameter,
 * split by the server: the client sends the batch as it is, where a `text[]` parameter costs
 * an array literal with every line's quotes and backslashes escaped (in a profile of batch-100
 * flushes, about 40% as much CPU as the core writer's whole per-event work).
 * Row count = line count: committed. 0 rows: nothing written ({@link APPEND_REFUSAL_SQL} says why).
 */
const APPEND_SQL = `
WITH h AS (
  UPDATE ledger_sessions
     SET next_seq = next_seq + $8::integer, last_crc = $5, last_batch = $6,
         updated_at = clock_timestamp()
   WHERE session_id = $1 AND writer_epoch = $2 AND writer_owner = $7 AND next_seq = $3
  RETURNING next_seq),
n AS MATERIALIZED (
  SELECT pg_notify('${APPEND_CHANNEL}', $1 || ' ' || h.next_seq) FROM h
   WHERE EXISTS (SELECT 1 FROM ledger_followers f WHERE f.session_id = $1 AND f.until > clock_timestamp()))
INSERT INTO ledger_events (session_id, seq, line, writer_epoch)
SELECT $1, $3 + t.o - 1, t.l, $2 FROM string_to_table($4::text, E'\n') WITH ORDINALITY AS t(l, o)
 WHERE EXISTS (SELECT 1 FROM h) AND (SELECT count(*) FROM n) >= 0`

/**
 * A follower announces itself for a session until `$3` seconds from now (refreshed while it
 * waits); expired rows of that session are swept. $1 id, $2 follower, $3 seconds.
 */
export const FOLLOWER_SQL = `
WITH swept AS (DELETE FROM ledger_followers WHERE session_id = $1 AND follower <> $2 AND until < clock_timestamp())
INSERT INTO ledger_followers (session_id, follower, until)
VALUES ($1, $2, clock_timestamp() + $3::integer * interval '1 second')
ON CONFLICT (session_id, follower) DO UPDATE SET until = excluded.until`

/** A follower leaves (backend closed). $1 follower. */
export const FOLLOWER_GONE_SQL = `DELETE FROM ledger_followers WHERE follower = $1`

/** Why an append, renew or checkpoint matched nothing. $1 id. */
export const APPEND_REFUSAL_SQL = `
SELECT writer_epoch::text AS epoch, writer_owner AS owner, next_seq::text AS next_seq, last_batch
  FROM ledger_sessions WHERE session_id = $1`

/**
 * The head, read after waiting for any in-flight append's row lock, so an orphaned commit
 * (a dropped connection, a commit waiting for a synchronous standby) is final before it is
 * read. Run inside a transaction with a `lock_timeout`. $1 id.
 */
export const HEAD_LOCKED_SQL = `
SELECT next_seq::text AS next_seq, last_crc, last_batch, writer_epoch::text AS epoch,
       CASE WHEN lease_until > clock_timestamp() THEN writer_owner END AS owner,
       writer_owner AS holder, ${iso('updated_at')} AS updated_at
  FROM ledger_sessions WHERE session_id = $1 FOR SHARE`

/** Renew: extend by the lease's own duration while the epoch and owner are still ours. $1 id, $2 epoch, $3 owner. */
export const RENEW_SQL = `
UPDATE ledger_sessions SET lease_until = clock_timestamp() + lease_ms * interval '1 millisecond'
 WHERE session_id = $1 AND writer_epoch = $2 AND writer_owner = $3
RETURNING ${iso('lease_until')} AS expires_at`

/** Release: forget the owner while the epoch is ours; a fenced or released lease matches nothing. */
export const RELEASE_SQL = `
UPDATE ledger_sessions SET writer_owner = NULL, lease_until = NULL, lease_ms = NULL
 WHERE session_id = $1 AND writer_epoch = $2 AND writer_owner = $3`

/** The durable head. $1 id. */
export const HEAD_SQL = `
SELECT next_seq::text AS next_seq, last_crc, last_batch, writer_epoch::text AS epoch,
       CASE WHEN lease_until > clock_timestamp() THEN writer_owner END AS owner,
       ${iso('updated_at')} AS updated_at
  FROM ledger_sessions WHERE session_id = $1`

/** The header line and head, for reads. $1 id. */
export const HEADER_SQL = `SELECT header_line, next_seq::text AS next_seq FROM ledger_sessions WHERE session_id = $1`

/**
 * One page of lines by primary key. Seqs are dense, so a page is a seq RANGE (no LIMIT):
 * whatever plan the server picks (stale statistics make it pick a bitmap scan), it touches
 * only the page's rows. $1 id, $2 first seq, $3 last seq (inclusive).
 */
const READ_PAGE_SQL = `
SELECT seq::text AS seq, line FROM ledger_events
 WHERE session_id = $1 AND seq >= $2 AND seq <= $3
 ORDER BY ledger_events.seq`

/** {@link READ_PAGE_SQL} prepared once per connection (a read sends one per page). */
export const READ_PAGE_STATEMENT = { name: 'agent-ledger-read-page', text: READ_PAGE_SQL } as const

/** {@link APPEND_SQL} prepared once per connection: every flush is bound and executed, not re-planned. */
export const APPEND_STATEMENT = { name: 'agent-ledger-append', text: APPEND_SQL } as const

/**
 * Fork, server-side, in one statement: the child row, the parent's lines `0..boundary`
 * copied verbatim, then the child's own lines. Nothing is written unless the parent's line
 * at the boundary still has the checksum the core read and the child id is free.
 * $1 parent, $2 boundary seq, $3 boundary crc, $4 child id, $5 child header, $6 child cwd,
 * $7 child lines[], $8 child last crc.
 */
export const FORK_SQL = `
WITH p AS (SELECT 1 FROM ledger_sessions WHERE session_id = $1),
x AS (SELECT 1 FROM ledger_sessions WHERE session_id = $4),
b AS (SELECT 1 FROM ledger_events WHERE session_id = $1 AND seq = $2 AND ${lineCrc('line')} = $3),
s AS (
  INSERT INTO ledger_sessions (session_id, header_line, parent_session, fork_seq, cwd, next_seq, last_crc)
  SELECT $4, $5, $1, $2, $6, $2 + 1 + cardinality($7::text[]), $8
   WHERE EXISTS (SELECT 1 FROM b) AND NOT EXISTS (SELECT 1 FROM x)
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id),
c AS (
  INSERT INTO ledger_events (session_id, seq, line, writer_epoch)
  SELECT $4, e.seq, e.line, 0 FROM ledger_events e
   WHERE e.session_id = $1 AND e.seq <= $2 AND EXISTS (SELECT 1 FROM s)
  RETURNING 1),
t AS (
  INSERT INTO ledger_events (session_id, seq, line, writer_epoch)
  SELECT $4, $2 + t.o, t.l, 0 FROM unnest($7::text[]) WITH ORDINALITY AS t(l, o)
   WHERE EXISTS (SELECT 1 FROM s)
  RETURNING 1)
SELECT (SELECT count(*) FROM p)::int AS parent_found, (SELECT count(*) FROM x)::int AS child_exists,
       (SELECT count(*) FROM b)::int AS boundary_ok, (SELECT count(*) FROM s)::int AS created,
       (SELECT count(*) FROM c)::int AS copied, (SELECT count(*) FROM t)::int AS added`

/** The parent's line checksum at a seq, to explain a refused fork. $1 id, $2 seq. */
export const LINE_CRC_SQL = `SELECT ${lineCrc('line')} AS crc FROM ledger_events WHERE session_id = $1 AND seq = $2`

/**
 * Checkpoint write, only while the writer's epoch and owner hold; `FOR SHARE` waits for a
 * concurrent acquire and re-checks, so a writer fenced meanwhile writes nothing.
 * $1 id, $2 epoch, $3 owner, $4 seq, $5 event crc, $6 header crc, $7 registry digest, $8 body.
 */
export const PUT_CHECKPOINT_SQL = `
INSERT INTO ledger_checkpoints (session_id, seq, event_crc, header_crc, registry_digest, body, writer_epoch)
SELECT s.session_id, $4, $5, $6, $7, $8, $2 FROM (
  SELECT session_id FROM ledger_sessions
   WHERE session_id = $1 AND writer_epoch = $2 AND writer_owner = $3 AND next_seq > $4
   FOR SHARE) AS s
ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, event_crc = excluded.event_crc,
  header_crc = excluded.header_crc, registry_digest = excluded.registry_digest, body = excluded.body,
  writer_epoch = excluded.writer_epoch, written_at = clock_timestamp()`

/** The stored checkpoint. $1 id. */
export const GET_CHECKPOINT_SQL = `
SELECT seq::text AS seq, event_crc, header_crc, registry_digest, body FROM ledger_checkpoints WHERE session_id = $1`

/** Columns of a listing row; `updated_us` (microseconds since the epoch, exact) is the keyset. */
export const LIST_COLUMNS = `session_id, header_line, next_seq::text AS next_seq, ${iso('updated_at')} AS updated_at,
  (extract(epoch FROM updated_at) * 1000000)::bigint::text AS updated_us`

/** The keyset condition: strictly after the cursor's `(updated_at, session_id)` in DESC order. */
export const LIST_AFTER = (usParam: string, idParam: string): string =>
  `(updated_at, session_id) < (timestamptz 'epoch' + ${usParam}::bigint * interval '1 microsecond', ${idParam})`
