/**
 * A tool's own journal: one append-only file per worker, one JSON line per entry, fsynced
 * before `record` returns, so a journaled `started` is on disk before the side effect begins
 * and a `finished` before the tool returns.
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'

import type { JournalEntry } from './checker.ts'

/** An open journal file. */
export interface Journal {
  /** Appends one entry and fsyncs the file before returning. */
  readonly record: (entry: JournalEntry) => void
  readonly close: () => void
}

/**
 * Opens (creating) the journal of one worker.
 *
 * @param directory - The run's journal directory.
 * @param worker - The worker's name, the file's name.
 * @returns The journal.
 */
export function openJournal(directory: string, worker: string): Journal {
  const fd = openSync(join(directory, `${worker}.jsonl`), 'a')
  return {
    record: (entry) => {
      writeSync(fd, `${JSON.stringify(entry)}\n`)
      fsyncSync(fd)
    },
    close: () => closeSync(fd),
  }
}

/**
 * Reads every journal of a run. A last line without its newline was never fsynced whole
 * (the worker died inside the write) and is left out.
 *
 * @param directory - The run's journal directory.
 * @returns The entries of every worker.
 */
export function readJournals(directory: string): JournalEntry[] {
  const entries: JournalEntry[] = []
  for (const name of readdirSync(directory)
    .filter((file) => file.endsWith('.jsonl'))
    .sort()) {
    const lines = readFileSync(join(directory, name), 'utf8').split('\n')
    lines.pop() // '' after the last newline, or an unterminated torn line
    for (const line of lines) entries.push(JSON.parse(line) as JournalEntry)
  }
  return entries
}
