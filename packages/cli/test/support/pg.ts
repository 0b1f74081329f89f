import { randomBytes } from 'node:crypto'

import pg from 'pg'
import { inject } from 'vitest'

/** The admin URL from the global setup, or null (then suites skip; CI already failed in setup). */
export const adminUrl: string | null = inject('pgUrl')
/** Why PostgreSQL suites skip here, or null. */
const skipReason: string | null = inject('pgSkipReason')

/** A suite title that says why it is skipped. */
export function pgTitle(title: string): string {
  return skipReason === null ? title : `${title} (skipped: ${skipReason})`
}

/**
 * Creates an empty database on the server and returns its URL, with a password that the
 * server (trust auth) ignores: every test can then check that no output ever shows it.
 */
export async function createDatabase(url: string, password = 'pw-never-shown'): Promise<string> {
  const name = `cli_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  parsed.password = password
  return parsed.toString()
}

/** Runs one statement on a fresh connection. */
export async function sqlOnce<TRow extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<TRow[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<TRow>(text, values)).rows
  } finally {
    await client.end()
  }
}
