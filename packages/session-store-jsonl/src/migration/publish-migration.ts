/*
 * Write mode of a migration: stream the new generation into `publishFile` (temp, fsync,
 * verified by reading it back through the store's scanner and projection, source identity
 * check, link, directory fsync), or accept the one another process published first.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import type { GenerationFile } from '../generations.ts'
import { JsonlErrorCode, JsonlStoreError } from '../jsonl-store-error.ts'
import { publishFile } from '../publish.ts'
import { dropSearchIndex } from '../search-index-sidecar.ts'
import { scanLog, tapped } from '../read-log.ts'
import type { ByteSource } from '../read-log.ts'
import type {
  MigrateWriteOptions,
  MigrationSource,
  MigrationWriteResult,
  Settings,
} from './migration-context.ts'
import { display } from './migration-context.ts'
import { migratedStream, peekV4Header } from './migration-source.ts'
import { detectGenerationFork } from './generation-fork.ts'
import type { SourceScan } from './source-record.ts'

const NEWLINE = Buffer.from('\n')

/**
 * The result of a write-mode migration that had nothing to do.
 *
 * @param settings - The migration's settings.
 * @param file - The current generation, already in the current format.
 * @param header - Its header.
 * @returns An `up-to-date` result.
 */
export function upToDate(settings: Settings, file: string, header: SessionHeader): MigrationWriteResult {
  const path = join(settings.directory, file)
  return {
    mode: 'write',
    outcome: 'up-to-date',
    file,
    path,
    header,
    lastSeq: -1,
    source: null,
    size: 0,
    sha256: '',
    handle: null,
  }
}

export async function targetAlreadyThere(
  settings: Settings,
  request: { generation: GenerationFile; target: GenerationFile },
): Promise<MigrationWriteResult> {
  const header = await peekV4Header(settings, request.target)
  const file = display(settings, request.target.file)
  if (header.migratedFrom?.file !== request.generation.file) {
    throw new JsonlStoreError({
      code: JsonlErrorCode.MIGRATION_CONFLICT,
      message: `Cannot migrate ${display(settings, request.generation.file)}: expected ${file} absent or migrated from it, found it ${header.migratedFrom === undefined ? 'not migrated' : `migrated from ${header.migratedFrom.file}`}.`,
      file,
      details: { reason: 'target-not-migrated-from-source', migratedFrom: header.migratedFrom ?? null },
    })
  }
  const fork = await detectGenerationFork({
    fs: settings.fs,
    directory: settings.directory,
    sessionId: settings.sessionId,
    header,
    registry: settings.registry,
    limits: settings.limits,
  })
  if (fork.status === 'forked') throw fork.error
  return upToDate(settings, request.target.file, header)
}

export async function publishMigration(
  settings: Settings,
  request: {
    options: MigrateWriteOptions
    scanned: { source: MigrationSource; scan: SourceScan }
    target: string
    lastSeq: number
  },
): Promise<MigrationWriteResult> {
  const { options, scanned, target, lastSeq } = request
  const { source } = scanned
  const stream = migratedStream(settings, { ...scanned, validate: false })
  const progress = settings.progress
  const total = scanned.scan.events
  let written = -1
  let stagedBytes = 0
  async function* content(): AsyncGenerator<Buffer, void, undefined> {
    const header = Buffer.concat([stream.headerLine, NEWLINE])
    stagedBytes += header.length
    yield header
    for await (const batch of stream.records) {
      const bytes = Buffer.concat(batch.flatMap((record) => [record.line, NEWLINE]))
      written = (batch.at(-1)?.event['seq'] as number | undefined) ?? written
      stagedBytes += bytes.length
      yield bytes
    }
  }
  const targetFile = display(settings, target)
  const verify = async (staged: ByteSource): Promise<void> => {
    const projection = createProjection({ registry: settings.registry })
    let verified = 0
    let bytesRead = 0
    progress.reset()
    const outcome = await scanLog(
      tapped(staged, (chunk) => (bytesRead += chunk.length)),
      {
        limits: settings.limits,
        registry: settings.registry,
        file: targetFile,
        onEvent: (event) => {
          projection.apply(event)
          verified += 1
          progress.report({
            phase: 'verify',
            eventsDone: verified,
            eventsTotal: total,
            bytesRead,
            bytesTotal: stagedBytes,
          })
        },
      },
    )
    const damage = outcome.damage
    if (damage !== null) {
      // Name the source event too: the staged file is gone once the publish fails.
      const sourceSeq =
        damage.seq === undefined ? undefined : damage.seq + (scanned.scan.version === 0 ? 1 : 0)
      throw new JsonlStoreError({
        code: damage.code,
        message: `${damage.message} (migrated from ${source.file}${sourceSeq === undefined ? '' : ` seq ${sourceSeq}`})`,
        file: damage.file,
        line: damage.line,
        offset: damage.offset,
        seq: damage.seq,
        lastGoodSeq: damage.lastGoodSeq,
        details: { ...damage.details, sourceFile: source.file, sourceSeq: sourceSeq ?? null },
        cause: damage,
      })
    }
    const problem =
      outcome.header === null
        ? 'no header'
        : outcome.header.version !== SESSION_FORMAT_VERSION
          ? `header version ${outcome.header.version}`
          : outcome.tornTail !== null
            ? `a torn tail at offset ${outcome.tornTail.offset}`
            : outcome.lastSeq !== written || outcome.lastSeq !== lastSeq
              ? `last seq ${outcome.lastSeq} (expected ${lastSeq}, wrote ${written})`
              : null
    if (problem !== null) {
      throw new JsonlStoreError({
        code: JsonlErrorCode.INVALID_HEADER,
        message: `The staged ${targetFile} does not read back as written: expected a v${SESSION_FORMAT_VERSION} header, ${lastSeq + 1} events and no tail, found ${problem}.`,
        file: targetFile,
        details: { reason: problem },
      })
    }
    progress.report(
      { phase: 'verify', eventsDone: verified, eventsTotal: total, bytesRead, bytesTotal: bytesRead },
      true,
    )
  }
  const published = await publishFile({
    fs: settings.fs,
    directory: settings.directory,
    target,
    kind: 'migrate',
    content,
    verify,
    source: source.identity,
    display: settings.sessionId,
    chunkBytes: settings.limits.readChunkBytes,
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
    ...(options.randomHex === undefined ? {} : { randomHex: options.randomHex }),
    ...(options.lock === undefined ? {} : { lock: options.lock }),
    ...(options.keepHandle === undefined ? {} : { keepHandle: options.keepHandle }),
  })
  // An index beside the directory's logs was built from another log than the one published.
  if (published.outcome === 'published') await dropSearchIndex(settings.fs, settings.directory)
  progress.report(
    {
      phase: 'publish',
      eventsDone: total,
      eventsTotal: total,
      bytesRead: published.size,
      bytesTotal: published.size,
    },
    true,
  )
  return {
    mode: 'write',
    outcome: published.outcome,
    file: target,
    path: published.path,
    header: stream.header as SessionHeader,
    lastSeq,
    source,
    size: published.size,
    sha256: published.sha256,
    handle: published.handle,
  }
}
