/**
 * Compress's two halves around the publish: cutting the plain log into compressed frames
 * (a few in flight off the event loop), and reading the staged `.zstd` file back to check it
 * holds exactly the expected content.
 */
import { createHash } from 'node:crypto'

import type { SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { JsonlErrorCode, JsonlStoreError } from './jsonl-store-error.ts'
import { tapped } from './read-log.ts'
import type { ByteSource } from './read-log.ts'
import { scanZstdLogChunks } from './zstd-log-reader.ts'
import type { ZstdScanOutcome } from './zstd-log-reader.ts'
import { lineFrames, ZSTD_FRAME_BYTES, ZSTD_SEAL_LEVEL } from './zstd-log-writer.ts'
import { sessionLog } from './zstd-session.ts'
import type { Run } from './compress-types.ts'

/**
 * Frames compressing at once while sealing: enough to keep the thread pool (or the wasm
 * worker) busy while this thread reads and cuts the next ones; each holds a 4 MiB frame.
 */
const FRAMES_IN_FLIGHT = 3

/**
 * Cuts whole lines into frames of about `frameBytes` plain bytes ({@link lineFrames}: the
 * header line alone first when `headerFirst`) and compresses them a few at a time.
 */
export async function* sealedFrames(
  run: Run,
  request: { readonly plain: ByteSource; readonly headerFirst: boolean; readonly total: number },
): AsyncGenerator<Buffer, void, undefined> {
  const level = run.options.level ?? ZSTD_SEAL_LEVEL
  const target = run.options.frameBytes ?? ZSTD_FRAME_BYTES
  let done = 0
  // Frames compress off the event loop, a few at a time (the thread pool or the wasm worker
  // works while this thread reads and cuts the next ones); they are yielded in order.
  const inFlight: { readonly frame: Promise<Uint8Array>; readonly bytes: number }[] = []
  const start = (content: Buffer): void => {
    const frame = run.codec.compressFrameAsync(content, level)
    // Awaited in order below; a rejection before then is not unhandled.
    frame.catch(() => undefined)
    inFlight.push({ frame, bytes: content.length })
  }
  const next = async (): Promise<Buffer> => {
    const head = inFlight.shift()!
    const bytes = await head.frame
    done += head.bytes
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }
  for await (const content of lineFrames(request.plain, target, request.headerFirst)) {
    if (content[content.length - 1] !== 0x0a) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.WRITE_FAILED,
        message: `Cannot compress session ${run.context.id}: expected its good prefix to end on a line boundary, found ${content.length} bytes after the last newline.`,
        file: sessionLog(run.context.id, 'zstd').file,
        details: { op: 'compress', cause: 'NOT_LINE_ALIGNED' },
      })
    }
    start(content)
    while (inFlight.length >= FRAMES_IN_FLIGHT) {
      yield await next()
      run.progress({ phase: 'compress', bytesRead: done, bytesTotal: request.total })
    }
  }
  while (inFlight.length > 0) yield await next()
  run.progress({ phase: 'compress', bytesRead: done, bytesTotal: request.total }, true)
}

/** A byte source that hashes what passes through it. */
export function hashed(source: ByteSource): { source: ByteSource; digest: () => string } {
  const hash = createHash('sha256')
  let digest: string | undefined
  return {
    source: tapped(source, (chunk) => hash.update(chunk)),
    digest: () => (digest ??= hash.digest('hex')),
  }
}

/** What the staged file must match. */
export interface Expected {
  readonly header: SessionHeader
  readonly lastSeq: number
  readonly events: number
  readonly plainBytes: number
  readonly plainSha256: () => string
}

/** Reads a staged `.zstd` file back through the reader and checks it holds exactly the expected content. */
export async function verifyStaged(
  run: Run,
  staged: ByteSource,
  expected: Expected & { readonly file: string },
): Promise<ZstdScanOutcome> {
  const { context } = run
  const plainHash = createHash('sha256')
  const projection = createProjection({ registry: context.registry })
  let compressedRead = 0
  const total = expected.plainBytes
  const counted = tapped(staged, (chunk) => (compressedRead += chunk.length))
  const chunks = scanZstdLogChunks(counted, {
    codec: run.codec,
    limits: context.limits,
    registry: context.registry,
    file: expected.file,
    sessionId: context.id,
    onEvent: (event) => {
      projection.apply(event)
    },
    onPlain: (chunk) => plainHash.update(chunk),
  })
  let outcome: ZstdScanOutcome
  for (;;) {
    const step = await chunks.next()
    if (step.done === true) {
      outcome = step.value
      break
    }
    run.progress({
      phase: 'verify',
      bytesRead: compressedRead,
      bytesTotal: total,
      eventsDone: projection.nextSeq,
    })
  }
  const found = {
    damage: outcome.damage?.code ?? null,
    tornTail: outcome.tornTail !== null,
    header: JSON.stringify(outcome.header),
    lastSeq: outcome.lastSeq,
    events: outcome.stats.events,
    plainBytes: outcome.zstd.plainBytes,
    plainSha256: plainHash.digest('hex'),
  }
  const wanted = {
    damage: null,
    tornTail: false,
    header: JSON.stringify(expected.header),
    lastSeq: expected.lastSeq,
    events: expected.events,
    plainBytes: expected.plainBytes,
    plainSha256: expected.plainSha256(),
  }
  const differing = Object.keys(wanted).filter(
    (key) => found[key as keyof typeof found] !== wanted[key as keyof typeof wanted],
  )
  if (differing.length > 0) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.WRITE_FAILED,
      message: `The compressed copy of session ${context.id} does not read back as its source: expected the same ${differing.join(', ')}, found ${differing.map((key) => `${key}=${String(found[key as keyof typeof found])}`).join(', ')}; nothing was published.`,
      file: expected.file,
      details: { op: 'verify', cause: 'STAGED_CONTENT_DIFFERS', differing, found, expected: wanted },
      ...(outcome.damage === null ? {} : { cause: outcome.damage }),
    })
  }
  run.progress(
    {
      phase: 'verify',
      bytesRead: compressedRead,
      bytesTotal: total,
      eventsDone: found.events,
      eventsTotal: found.events,
    },
    true,
  )
  return outcome
}
