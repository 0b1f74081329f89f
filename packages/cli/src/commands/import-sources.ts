import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'

import { splitLines } from '@agent-ledger/import'
import { loadZstdCodec, parseFrameAt } from '@agent-ledger/session-store-jsonl/format'

import { CliError, CliErrorCode } from '../cli-error.ts'
import { ioError } from '../session-path.ts'

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
  readonly lines: AsyncIterable<string>
  /** SHA-256 (hex) of the bytes read; complete once `lines` is exhausted. */
  digest(): string
}

const MAX_ZSTD_OUTPUT_BYTES = 1024 * 1024 * 1024

function byNumber(left: string, right: string): number {
  const a = Number.parseInt(left, 10)
  const b = Number.parseInt(right, 10)
  return Number.isNaN(a) || Number.isNaN(b) || a === b ? left.localeCompare(right) : a - b
}

async function eventFiles(directory: string): Promise<string[]> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.json'))
  return names.sort(byNumber)
}

/**
 * The sources under `path`: the file itself, or every `.jsonl`, `.jsonl.zst` and `.json` file
 * below a directory (recursively; in each directory its files in name order, then its
 * directories), an `events/` directory of JSON files (OpenHands) counting as one source.
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
  if (info.isFile()) {
    const kind = path.endsWith('.zst') ? 'zst' : 'jsonl'
    return [
      { path, kind, sourceName: basename(path).replace(/\.(jsonl|json)(\.zst)?$/, ''), bytes: info.size },
    ]
  }
  const found: ImportSourceFile[] = []
  const walk = async (directory: string): Promise<void> => {
    // Files before directories, each in name order: a Claude Code session file comes before
    // the directory of its sub-agent files, so a parent is imported before its children.
    const entries = (await readdir(directory, { withFileTypes: true })).sort(
      (a, b) => Number(a.isDirectory()) - Number(b.isDirectory()) || a.name.localeCompare(b.name),
    )
    for (const entry of entries) {
      const full = join(directory, entry.name)
      if (entry.isDirectory()) {
        const files = entry.name === 'events' ? await eventFiles(full) : []
        if (files.length > 0) {
          let bytes = 0
          for (const file of files) bytes += (await stat(join(full, file))).size
          found.push({ path: full, kind: 'events-dir', sourceName: basename(directory), bytes })
        } else await walk(full)
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
    await walk(path)
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

async function* zstdText(path: string, hash: ReturnType<typeof createHash>, onBytes: (n: number) => void) {
  const compressed = await readFile(path)
  hash.update(compressed)
  const codec = await loadZstdCodec()
  const decoder = new TextDecoder('utf-8')
  let offset = 0
  while (offset < compressed.length) {
    const parsed = parseFrameAt(compressed, offset)
    if (parsed.status !== 'complete') {
      throw new CliError({
        code: CliErrorCode.IO_ERROR,
        path,
        message: `${path}: expected Zstandard frames, found ${parsed.status === 'incomplete' ? 'a frame cut short' : 'bytes that are not a frame'} at offset ${offset}`,
      })
    }
    const { frame } = parsed
    if (frame.kind === 'zstd') {
      // One frame is decoded at a time (a Codex rollout is usually one frame).
      const chunks: string[] = []
      codec.decompressFrameChunks(
        compressed.subarray(offset, offset + frame.length),
        { maxOutputBytes: MAX_ZSTD_OUTPUT_BYTES },
        (chunk) => {
          chunks.push(decoder.decode(chunk, { stream: true }))
        },
      )
      yield* chunks
    }
    offset += frame.length
    onBytes(frame.length)
  }
  const rest = decoder.decode()
  if (rest !== '') yield rest
}

async function* eventLines(path: string, hash: ReturnType<typeof createHash>, onBytes: (n: number) => void) {
  for (const name of await eventFiles(path)) {
    const bytes = await readFile(join(path, name))
    hash.update(name).update('\0').update(bytes)
    onBytes(bytes.length)
    let value: unknown
    try {
      value = JSON.parse(bytes.toString('utf8'))
    } catch {
      // Not JSON: handed over as is, so the importer reports it with its position.
      yield bytes.toString('utf8').replace(/\n/g, ' ')
      continue
    }
    yield JSON.stringify(value)
  }
}

/**
 * Lines of a source still being written: like `splitLines`, but a last line without its
 * newline is held back (it is still being written), and reported with its number.
 */
async function* completeLines(
  chunks: AsyncIterable<string>,
  onTorn: (line: number, chars: number) => void,
): AsyncGenerator<string> {
  let rest = ''
  let line = 0
  for await (const chunk of chunks) {
    rest += chunk
    let start = 0
    for (let index = rest.indexOf('\n'); index !== -1; index = rest.indexOf('\n', start)) {
      line += 1
      yield rest.slice(start, index)
      start = index + 1
    }
    rest = rest.slice(start)
  }
  if (rest !== '') onTorn(line + 1, rest.length)
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
