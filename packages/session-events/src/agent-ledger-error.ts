/**
 * The one error base of agent-ledger: every package's error class extends it, so a caller
 * can branch on `code` without knowing which package (or which backend behind the session
 * core) threw.
 */

/** The marker every {@link AgentLedgerError} carries, shared by every copy of every package. */
const marker = Symbol.for('@agent-ledger/error')

/** Everything an {@link AgentLedgerError} carries besides its code and message. */
export interface AgentLedgerErrorOptions<
  TCode extends string = string,
  TDetails = Readonly<Record<string, unknown>>,
> {
  /** One of the throwing package's stable codes. */
  readonly code: TCode
  /** One sentence: what failed, on which input, what was expected and what was found. */
  readonly message: string
  /** Row-specific context, typed by the subclass (expected, found, option, errno...). */
  readonly details?: TDetails | undefined
  /** The underlying error, when there is one (never pasted into `message`). */
  readonly cause?: unknown
}

/**
 * The base of every agent-ledger error class: a stable `code` (a string-literal union per
 * subclass), a `message` naming the input, what was expected and what was found, typed
 * `details` and the underlying `cause`.
 *
 * `instanceof` fails when two copies of a package are loaded (source and built code, two
 * installs): use {@link AgentLedgerError.is} and each subclass's own `is()` instead.
 *
 * @typeParam TCode - The subclass's code union.
 * @typeParam TDetails - The shape of `details`.
 */
export class AgentLedgerError<
  TCode extends string = string,
  TDetails = Readonly<Record<string, unknown>>,
> extends Error {
  readonly code: TCode
  readonly details: TDetails
  readonly [marker] = true

  /** @param options - Code, message, details and cause. */
  constructor(options: AgentLedgerErrorOptions<TCode, TDetails>) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code
    this.details = (options.details ?? Object.freeze({})) as TDetails
  }

  /**
   * True for an error of any agent-ledger package, from any copy of it, optionally with one
   * of `codes`.
   *
   * @param value - Anything caught.
   * @param codes - When given, the error's code must be one of them.
   * @returns Whether `value` is such an error.
   */
  static is(value: unknown, ...codes: readonly string[]): value is AgentLedgerError<string, unknown> {
    if (typeof value !== 'object' || value === null || !(marker in value)) return false
    return codes.length === 0 || codes.includes((value as AgentLedgerError).code)
  }
}
