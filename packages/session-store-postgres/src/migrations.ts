import { createHash } from 'node:crypto'

/** One schema change, applied once, in its own transaction, recorded in `ledger_schema_migrations`. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/**
 * Every schema change, oldest first. Never edit a released entry (its checksum is recorded
 * and checked): add a new version instead.
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, events, checkpoints',
    sql: `
CREATE TABLE ledger_sessions (
  session_id     text PRIMARY KEY CHECK (session_id ~ '^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$'),
  header_line    text NOT NULL,
  parent_session text,
  fork_seq       bigint,
  cwd            text,
  next_seq       bigint NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
  last_crc       text CHECK (last_crc ~ '^[0-9a-f]{8}$'),
  last_batch     text,
  writer_epoch   bigint NOT NULL DEFAULT 0,
  writer_owner   text,
  lease_ms       integer,
  lease_until    timestamptz,
  created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ledger_sessions_recent ON ledger_sessions (updated_at DESC, session_id DESC);
CREATE INDEX ledger_sessions_cwd ON ledger_sessions (cwd, updated_at DESC, session_id DESC);
CREATE INDEX ledger_sessions_parent ON ledger_sessions (parent_session, updated_at DESC, session_id DESC);

CREATE TABLE ledger_events (
  session_id   text   NOT NULL,
  seq          bigint NOT NULL CHECK (seq >= 0),
  line         text   NOT NULL CHECK (line LIKE '{%,"crc":"________"}'),
  writer_epoch bigint NOT NULL,
  PRIMARY KEY (session_id, seq)
);

-- Live followers (LISTEN) announce themselves per session: an append sends NOTIFY only when
-- the session has one, because NOTIFY takes a database-wide lock across commit and would
-- serialize the commits of every writer.
CREATE TABLE ledger_followers (
  session_id text NOT NULL,
  follower   text NOT NULL,
  until      timestamptz NOT NULL,
  PRIMARY KEY (session_id, follower)
);

CREATE TABLE ledger_checkpoints (
  session_id      text PRIMARY KEY REFERENCES ledger_sessions (session_id) ON DELETE CASCADE,
  seq             bigint NOT NULL CHECK (seq >= 0),
  event_crc       text   NOT NULL,
  header_crc      text   NOT NULL,
  registry_digest text   NOT NULL,
  body            bytea  NOT NULL,
  writer_epoch    bigint NOT NULL,
  written_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
`,
  },
  {
    version: 2,
    name: 'search index',
    // The trigram index narrows store.search to the lines holding every term (ILIKE); the
    // core then matches exactly. pg_trgm ships with PostgreSQL (contrib) and is a trusted
    // extension; where it cannot be created, search still works, without the index. The
    // order index walks the events in hit order (code-unit session ids, then seq) whatever
    // the database's collation: a query whose words are on most lines reads a batch off it
    // instead of sorting every matching row.
    sql: `
CREATE INDEX ledger_events_search_order ON ledger_events (session_id COLLATE "C", seq);
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'agent-ledger: pg_trgm is not available (%); store.search runs without its index', SQLERRM;
END
$$;
DO $$
DECLARE
  trgm_schema text;
BEGIN
  SELECT n.nspname INTO trgm_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
   WHERE e.extname = 'pg_trgm';
  IF trgm_schema IS NOT NULL THEN
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS ledger_events_search ON ledger_events USING gin (line %I.gin_trgm_ops)',
      trgm_schema);
  END IF;
END
$$;
`,
  },
  {
    version: 3,
    name: 'search index off the append',
    // Migration 2's two indexes on ledger_events made every append maintain a trigram GIN
    // entry per trigram of every line and a second btree (3.9x the server CPU of a bare
    // insert per flush). They go; search reads block signatures instead, written after the
    // append's commit (src/search-index.ts): a block row holds the Bloom signature of about
    // 32 KB of consecutive lines of one session, and the progress row says up to which seq
    // the blocks cover it; later lines are the tail every search reads. Sessions written
    // before this migration are all tail until caught up (on their next release, or the
    // first search that meets them). The pg_trgm extension is left as it is: other objects
    // may use it.
    sql: `
DROP INDEX IF EXISTS ledger_events_search;
DROP INDEX IF EXISTS ledger_events_search_order;
CREATE TABLE ledger_search_progress (
  session_id text COLLATE "C" PRIMARY KEY,
  next_seq   bigint NOT NULL CHECK (next_seq >= 0),
  open_seq   bigint CHECK (open_seq >= 0)
);
CREATE TABLE ledger_search_blocks (
  session_id text COLLATE "C" NOT NULL,
  first_seq  bigint NOT NULL CHECK (first_seq >= 0),
  last_seq   bigint NOT NULL,
  signature  bytea NOT NULL CHECK (octet_length(signature) = 1024),
  PRIMARY KEY (session_id, first_seq),
  CHECK (last_seq >= first_seq)
);
ALTER TABLE ledger_search_blocks ALTER COLUMN signature SET STORAGE PLAIN;
`,
  },
]

/** The schema version this library reads and writes. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0

/**
 * Key of the transaction-scoped advisory lock every `migrate` takes first, so two processes
 * migrating at once apply each migration exactly once (the second waits, then finds it done).
 */
export const MIGRATION_LOCK_KEY = 0x4c454447 // "LEDG"

/** The recorded checksum of a migration's SQL (sha256, hex). */
export function migrationChecksum(migration: Migration): string {
  return createHash('sha256').update(migration.sql).digest('hex')
}

/** What is recorded about one applied migration. */
export interface AppliedMigration {
  readonly version: number
  readonly checksum: string
}

/** Why `migrate` or `open` refused a database. */
export type SchemaProblem =
  | { readonly kind: 'too-new'; readonly found: number; readonly known: number }
  | {
      readonly kind: 'edited'
      readonly version: number
      readonly recorded: string
      readonly expected: string
    }
  | { readonly kind: 'behind'; readonly found: number; readonly known: number }

/**
 * Compares the applied migrations with {@link MIGRATIONS}.
 *
 * @returns The migrations still to apply, or the problem that forbids going on.
 */
export function planMigrations(
  applied: readonly AppliedMigration[],
): { readonly pending: readonly Migration[] } | { readonly problem: SchemaProblem } {
  const known = new Map(MIGRATIONS.map((migration) => [migration.version, migration]))
  for (const row of applied) {
    const migration = known.get(row.version)
    if (migration === undefined) {
      return {
        problem: {
          kind: 'too-new',
          found: Math.max(...applied.map((a) => a.version)),
          known: SCHEMA_VERSION,
        },
      }
    }
    const expected = migrationChecksum(migration)
    if (row.checksum !== expected) {
      return { problem: { kind: 'edited', version: row.version, recorded: row.checksum, expected } }
    }
  }
  const done = new Set(applied.map((row) => row.version))
  return { pending: MIGRATIONS.filter((migration) => !done.has(migration.version)) }
}

/** The migrations table, created under the advisory lock. */
export const MIGRATIONS_TABLE_SQL = `
CREATE TABLE IF NOT EXISTS ledger_schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`
