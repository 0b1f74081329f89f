import { AgentLedgerError } from '@agent-ledger/session-events'

/** Why an import was refused. Branch on these, never on `message`. */
export const ImportErrorCode = {
  /** The content matches none of the supported formats (`--from auto`), or not the one asked for. */
  UNRECOGNIZED_FORMAT: 'UNRECOGNIZED_FORMAT',
  /** A line in the middle of the source is not a JSON object (strict mode). */
  MALFORMED_LINE: 'MALFORMED_LINE',
  /** The last line is not complete JSON: a writer was cut short, or is still writing (strict mode). */
  TORN_LINE: 'TORN_LINE',
  /** A line is longer than the store's line limit (it is never read into memory; strict mode). */
  LINE_TOO_LARGE: 'LINE_TOO_LARGE',
  /** A record is JSON but not shaped as its format says (a required field missing or of the wrong type; strict mode). */
  INVALID_RECORD: 'INVALID_RECORD',
  /**
   * A record the store cannot hold: nested deeper than its limit, a number JSON cannot write
   * (`1e400`), too many entries (strict mode; lenient mode skips and counts it).
   */
  UNSTORABLE_RECORD: 'UNSTORABLE_RECORD',
  /** The source holds no record at all. */
  EMPTY_SOURCE: 'EMPTY_SOURCE',
  /** The options are invalid (a digest that is not hex, an unknown format name...). */
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  /**
   * The events built for a session broke a rule of the event model (a bug in an importer, never
   * the source's fault): the import is refused rather than publishing a session the store or a
   * provider would refuse.
   */
  INVALID_IMPORT: 'INVALID_IMPORT',
  /** An incremental import found that the session already stored is not a prefix of the new import. */
  DIVERGED: 'DIVERGED',
} as const
export type ImportErrorCode = (typeof ImportErrorCode)[keyof typeof ImportErrorCode]

const brand = Symbol.for('@agent-ledger/import/ImportError')

/** Thrown by the importers; carries the source file and line so the message is never the only clue. */
export class ImportError extends AgentLedgerError<ImportErrorCode> {
  override readonly name = 'ImportError'
  /** The source file as the caller named it. */
  readonly file: string | undefined
  /** 1-based line (or record number, for a JSON array source) the error is about. */
  readonly line: number | undefined
  readonly [brand] = true

  constructor(options: {
    code: ImportErrorCode
    message: string
    file?: string | undefined
    line?: number | undefined
    cause?: unknown
  }) {
    super({ code: options.code, message: options.message, cause: options.cause })
    this.file = options.file
    this.line = options.line
  }

  /** True for an `ImportError` from any copy of this package. */
  static override is(value: unknown): value is ImportError {
    return typeof value === 'object' && value !== null && brand in value
  }
}
