import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, open, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { pipeline } from 'node:stream/promises'

import { LOG_FILE_NAME, ZSTD_LOG_FILE_NAME } from '@agent-ledger/session-store-jsonl/format'

import { CliError, CliErrorCode } from './cli-error.ts'
import { zstdText } from './commands/zstd-stream.ts'
import { ioError } from './session-path.ts'

/** The `<session>` argument that means "read the log from standard input". */
export const STDIN_ARGUMENT = '-'

/** The first bytes of a Zstandard frame (RFC 8878). */
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])

/** A header line longer than this is not looked for further (the log is refused as not a log). */
const MAX_HEADER_BYTES = 16 * 1024 * 1024

/** The log read from standard input, as a session directory in a private temporary store root. */
export interface StdinSession {
  /** The session directory (absolute): named by the header's session id. */
  readonly directory: string
  /** Removes the temporary root. Never throws. */
  readonly cleanup: () => Promise<void>
}

function notALog(found: string): CliError {
  return new CliError({
    code: CliErrorCode.NOT_A_SESSION,
    message: `standard input ("-") is not a session log: expected a v4 JSONL log (plain, or Zstandard-compressed) whose first line is its header with the session "id", found ${found}`,
    path: STDIN_ARGUMENT,
  })
}

/** The first line of the log text (decoded when compressed), or null when there is none within the limit. */
async function firstLine(path: string, compressed: boolean): Promise<string | null> {
  const source = compressed
    ? zstdText(path, { update: () => undefined }, () => undefined)
    : (createReadStream(path, { encoding: 'utf8', highWaterMark: 64 * 1024 }) as AsyncIterable<string>)
  let text = ''
  for await (const chunk of source) {
    text += chunk
    const end = text.indexOf('\n')
    if (end >= 0) return text.slice(0, end)
    if (text.length > MAX_HEADER_BYTES) return null
  }
  return null
}

/**
 * Copies standard input (a session log, plain or Zstandard-compressed, told apart by the
 * magic bytes) into a new private temporary root as `<root>/<id>/session.v4.jsonl[.zstd]`,
 * the id read from the log's header line, so the commands read it through the store as
 * they read any session directory.
 *
 * @param input - Standard input.
 * @returns The session directory and its cleanup.
 * @throws {@link CliError} `NOT_A_SESSION` when the input has no header line with a usable id; `IO_ERROR`.
 */
export async function stdinSession(input: AsyncIterable<Uint8Array>): Promise<StdinSession> {
  const root = await mkdtemp(join(tmpdir(), 'agent-ledger-stdin-'))
  const cleanup = (): Promise<void> => rm(root, { recursive: true, force: true }).catch(() => undefined)
  try {
    const incoming = join(root, '.incoming')
    try {
      await pipeline(input, createWriteStream(incoming, { mode: 0o600 }))
    } catch (error) {
      throw ioError(error, { path: 'standard input', doing: 'read' })
    }
    const magic = Buffer.alloc(4)
    const handle = await open(incoming, 'r')
    const { bytesRead } = await handle.read(magic, 0, 4, 0).finally(() => handle.close())
    if (bytesRead === 0) throw notALog('nothing (it was empty)')
    const compressed = bytesRead === 4 && magic.equals(ZSTD_MAGIC)
    const line = await firstLine(incoming, compressed)
    if (line === null) throw notALog('no complete first line')
    let id: unknown
    try {
      id = (JSON.parse(line) as { id?: unknown } | null)?.id
    } catch {
      throw notALog(`a first line that is not JSON (${JSON.stringify(line.slice(0, 40))}...)`)
    }
    if (typeof id !== 'string' || id === '' || id === '.' || id === '..' || basename(id) !== id) {
      throw notALog(`a header without a usable "id" (${JSON.stringify(id ?? null)})`)
    }
    const directory = join(root, id)
    await mkdir(directory, { mode: 0o700 })
    await rename(incoming, join(directory, compressed ? ZSTD_LOG_FILE_NAME : LOG_FILE_NAME))
    return { directory, cleanup }
  } catch (error) {
    await cleanup()
    throw error
  }
}
