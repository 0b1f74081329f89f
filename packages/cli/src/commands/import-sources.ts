import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

import { splitLines } from '@agent-ledger/import'
import type { SourceLine } from '@agent-ledger/import'

import { CliError, CliErrorCode, ExitCode } from '../cli-error.ts'
import { ioError } from '../session-path.ts'
import { zstdText } from './zstd-stream.ts'

/** One source to import: a log file, a `.jsonl.zst` rollout, or an OpenHands `events/` directory. */
export interface ImportSourceFile {
  /** Absolute path of the file or directory. */
  readonly path: string
  readonly kind: 'jsonl' | 'zst' | 'events-dir'
  /** Name used for the session id when the content records none (OpenHands). */
  readonly sourceName: string
  /** Bytes on disk (the sum of the event files for a directory). */
  readonly bytes: number
}

/** A source opened for reading: its lines, and its digest once they are all read. */
export interface OpenedSource {
  readonly lines: AsyncIterable<SourceLine>
  /** SHA-256 (hex) of the bytes read; complete once `lines` is exhausted. */
  digest(): string
}

function byNumber(left: string, right: string): number {
  const a = Number.parseInt(left, 10)
  const b = Number.parseInt(right, 10)
  return Number.isNaN(a) || Number.isNaN(b) || a === b ? left.localeCompare(right) : a - b
}

/** Files beside an OpenHands `events/` directory that hold the conversation's state (not imported). */
const OPENHANDS_STATE_FILES: ReadonlySet<string> = new Set(['base_state.json', 'metadata.json'])

async function eventFiles(directory: string): Promise<string[]> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.json'))
  return names.sort(byNumber)
}

/**
 * The sources under `path`: the file itself, or every `.jsonl`, `.jsonl.zst` and `.json` file
 * below a directory (recursively; in each directory its files in name order, then its
 * directories), an `events/` directory of JSON files (OpenHands, named itself or found below)
 * counting as one source named after the directory that holds it; `base_state.json` and
 * `metadata.json` beside it (the conversation's state) are not sources.
 *
 * @throws {@link CliError} `IO_ERROR` when `path` cannot be read.
 */
export async function findSources(path: string, shown: string): Promise<ImportSourceFile[]> {
  let info
  try {
    info = await stat(path)
  } catch (error) {
    throw ioError(error, { path: shown, doing: 'read' })
  }
  if (!info.isFile() && !info.isDirectory()) {
    // A FIFO would block the read, a device never ends: refused before anything opens it.
    const kind = info.isFIFO() ? 'a FIFO' : info.isSocket() ? 'a socket' : 'a device'
    throw new CliError({
      code: CliErrorCode.NOT_REGULAR_FILE,
      path: shown,
      exitCode: ExitCode.DAMAGE,
      message: `import: expected a session log file or a directory at ${shown}, found ${kind}; it was not read`,
    })
  }
  if (info.isFile()) {
    const kind = path.endsWith('.zst') ? 'zst' : 'jsonl'
    return [
      { path, kind, sourceName: basename(path).replace(/\.(jsonl|json)(\.zst)?$/, ''), bytes: info.size },
    ]
  }
  const found: ImportSourceFile[] = []
  /** An OpenHands `events/` directory with event files: one source named after its conversation. */
  const eventsDir = async (full: string, conversation: string): Promise<boolean> => {
    const files = await eventFiles(full)
    if (files.length === 0) return false
    let bytes = 0
    for (const file of files) bytes += (await stat(join(full, file))).size
    found.push({ path: full, kind: 'events-dir', sourceName: basename(conversation), bytes })
    return true
  }
  const walk = async (directory: string): Promise<void> => {
    // Files before directories, each in name order: a Claude Code session file comes before
    // the directory of its sub-agent files, so a parent is imported before its children.
    const entries = (await readdir(directory, { withFileTypes: true })).sort(
      (a, b) => Number(a.isDirectory()) - Number(b.isDirectory()) || a.name.localeCompare(b.name),
    )
    // An OpenHands conversation directory: its events are the session; `base_state.json` (V1)
    // and `metadata.json` (V0) beside them are the conversation's state, not session logs.
    const conversation = entries.some((entry) => entry.isDirectory() && entry.name === 'events')
    for (const entry of entries) {
      const full = join(directory, entry.name)
      if (entry.isDirectory()) {
        if (!(entry.name === 'events' && (await eventsDir(full, directory)))) await walk(full)
      } else if (conversation && OPENHANDS_STATE_FILES.has(entry.name)) {
        continue
      } else if (entry.isFile() && /\.(jsonl|json)(\.zst)?$/.test(entry.name)) {
        found.push({
          path: full,
          kind: entry.name.endsWith('.zst') ? 'zst' : 'jsonl',
          sourceName: entry.name.replace(/\.(jsonl|json)(\.zst)?$/, ''),
          bytes: (await stat(full)).size,
        })
      }
    }
  }
  try {
    // The `events/` directory itself, named directly: one source too.
    if (!(basename(path) === 'events' && (await eventsDir(path, dirname(path))))) await walk(path)
  } catch (error) {
    throw ioError(error, { path: shown, doing: 'read' })
  }
  return found
}

async function* fileText(path: string, hash: ReturnType<typeof createHash>, onBytes: (n: number) => void) {
  const decoder = new TextDecoder('utf-8')
  for await (const chunk of createReadStream(path)) {
    const bytes = chunk as Buffer
    hash.update(bytes)
    onBytes(bytes.length)
    yield decoder.decode(bytes, { stream: true })
  }
  const rest = decoder.decode()
  if (rest !== '') yield rest
}

async function* eventLines(path: string, hash: ReturnType<typeof createHash>, onBytes: (n: number) => void) {
  for (const name of await eventFiles(path)) {
    const bytes = await readFile(join(path, name))
    hash.update(name).update('\0').update(bytes)
    onBytes(bytes.length)
    const text = bytes.toString('utf8')
    try {
      JSON.parse(text)
    } catch {
      // Not JSON: handed over as is, so the importer reports it with its position.
      yield text.replace(/\n/g, ' ')
      continue
    }
    // The file's text itself (without a final newline), so the verbatim copy of the event is
    // its bytes (Python's `json.dumps` writes `", "` separators `JSON.stringify` would drop).
    yield text.replace(/\r?\n$/, '')
  }
}

/**
 * Lines of a source still being written: `splitLines`' lines, but a last line without its
 * newline is held back (it is still being written), and reported with its number.
 */
async function* completeLines(
  chunks: AsyncIterable<string>,
  onTorn: (line: number, chars: number) => void,
): AsyncGenerator<SourceLine> {
  let held: SourceLine | undefined
  let line = 0
  for await (const next of splitLines(chunks)) {
    if (held !== undefined) {
      line += 1
      yield held
    }
    held = next
  }
  // The last piece is what follows the last newline: empty when the source ends with one.
  if (held !== undefined && held !== '')
    onTorn(line + 1, typeof held === 'string' ? held.length : held.tooLong)
}

/** How {@link openSource} reads. */
export interface OpenOptions {
  /** Called with the bytes read so far, for progress. */
  readonly onBytes?: (bytesSoFar: number) => void
  /**
   * A live source (`import --follow`): a last line without its newline is not handed over
   * (it is being written) but reported here. Plain files only.
   */
  readonly onTorn?: (line: number, chars: number) => void
}

/**
 * Opens a source for the importer: lines (decompressed for `.zst`, one JSON object per line
 * for an events directory) and the SHA-256 of the bytes read. Each call reads the source
 * again from the start.
 */
export function openSource(source: ImportSourceFile, options: OpenOptions = {}): OpenedSource {
  const onBytes = options.onBytes ?? ((): void => undefined)
  const onTorn = options.onTorn
  const hash = createHash('sha256')
  let total = 0
  const count = (bytes: number): void => {
    total += bytes
    onBytes(total)
  }
  let digest: string | undefined
  const lines =
    source.kind === 'events-dir'
      ? eventLines(source.path, hash, count)
      : source.kind === 'zst'
        ? splitLines(zstdText(source.path, hash, count))
        : onTorn === undefined
          ? splitLines(fileText(source.path, hash, count))
          : completeLines(fileText(source.path, hash, count), onTorn)
  return {
    lines: (async function* () {
      yield* lines
      digest = hash.digest('hex')
    })(),
    digest: () => {
      digest ??= hash.copy().digest('hex')
      return digest
    },
  }
}

/** The default locations of each agent's sessions under `home`. */
export function defaultLocations(home: string): readonly { readonly agent: string; readonly path: string }[] {
  return [
    { agent: 'claude-code', path: join(home, '.claude', 'projects') },
    { agent: 'codex', path: join(home, '.codex', 'sessions') },
    { agent: 'pi', path: join(home, '.pi', 'agent', 'sessions') },
  ]
}
