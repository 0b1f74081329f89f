import { parseArgs } from 'node:util'

import { usageError } from './cli-error.ts'
import type { CommandContext } from './context.ts'

/** One option of a command, in node:util parseArgs terms. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean'
  readonly short?: string
}

/** The parsed arguments of one command. */
export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | boolean | undefined>>
  readonly positionals: readonly string[]
}

/** A CLI command: its name, help text, options and what it does. */
export interface CommandSpec {
  /** The command word (`verify`). */
  readonly name: string
  /** One line for the command list of `agent-ledger --help`. */
  readonly summary: string
  /** The full `--help` text: usage, description, options, output, exit codes. */
  readonly help: string
  /** Options besides `--help` (added to every command). */
  readonly options: Readonly<Record<string, OptionSpec>>
  /** True for commands whose stdout is a stream of records (cat, tail): no JSON error document is appended to it. */
  readonly streams?: boolean
  /** True for commands that write sessions (a PostgreSQL store's schema is then migrated on open). */
  readonly writes?: boolean
  /** True for a read-only command that reads one log: its `<session>` may be `-` (standard input). */
  readonly stdin?: boolean
  /** True when the command's output can be long: on a terminal it then goes through the pager (unless `--no-pager`). */
  pages?(args: ParsedArgs): boolean
  /** Names of the positional arguments, in order (`<session>`); all are required unless `positionalsOptional`. */
  readonly positionals: readonly string[]
  /** True when the positionals may also be left out altogether (`import --scan`). */
  readonly positionalsOptional?: boolean
  /**
   * Runs the command.
   *
   * @returns The exit code.
   */
  run(context: CommandContext, args: ParsedArgs): Promise<number>
}

/** `--json`: machine output on stdout. */
export const JSON_OPTION: OptionSpec = { type: 'boolean' }
/** `--no-pager`: print directly on a terminal, not through the pager. */
export const NO_PAGER_OPTION: OptionSpec = { type: 'boolean' }
/** `--no-progress`: no progress lines on stderr. */
export const NO_PROGRESS_OPTION: OptionSpec = { type: 'boolean' }

/** `--a, --b, -o/--output`: the options a command accepts, for messages. */
function optionList(spec: CommandSpec): string {
  return [...Object.entries(spec.options), ['help', { type: 'boolean', short: 'h' }] as const]
    .map(([name, option]) => (option.short === undefined ? `--${name}` : `-${option.short}/--${name}`))
    .join(', ')
}

/**
 * Node's parseArgs errors in our own words: which option, what was expected, what was found.
 * Node's text (with its advice about \`--\` and an unbalanced quote) never reaches the user.
 */
function describeParseError(spec: CommandSpec, error: unknown, argv: readonly string[]): string {
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : String(error)
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? 'an option'
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}: expected one of ${optionList(spec)}`
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      if (/does not take an argument/.test(message)) return `${option} takes no value, found one`
      // "ambiguous": the next argument is one of the command's options (`-o --force`).
      const given = /is ambiguous/.test(message) ? argv[argv.indexOf(option) + 1] : undefined
      return given === undefined
        ? `expected a value after ${option}, found none`
        : `expected a value after ${option}, found the option ${given}`
    }
    default:
      return `could not read the arguments (${message.split('\n')[0]!.replace(/\.$/, '')})`
  }
}

/**
 * Like getopt, a string option takes the next argument as its value even when it starts
 * with a dash (`tail -n -3` gives `--lines` the value `-3`, which the command then checks),
 * unless that argument is one of the command's own options (`-o --force` stays an error).
 *
 * @returns The arguments with such values joined as `--name=value`.
 */
function joinDashValues(spec: CommandSpec, argv: readonly string[]): string[] {
  const options = Object.entries(spec.options)
  const isOption = (arg: string): boolean =>
    arg === '-h' ||
    arg === '--help' ||
    options.some(
      ([name, option]) =>
        arg === `--${name}` ||
        arg.startsWith(`--${name}=`) ||
        (option.short !== undefined && arg === `-${option.short}`),
    )
  const out: string[] = []
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!
    if (arg === '--') {
      out.push(...argv.slice(index))
      break
    }
    const named = options.find(
      ([name, option]) =>
        option.type === 'string' &&
        (arg === `--${name}` || (option.short !== undefined && arg === `-${option.short}`)),
    )
    const next = argv[index + 1]
    if (
      named !== undefined &&
      next !== undefined &&
      next.startsWith('-') &&
      next !== '-' &&
      !isOption(next)
    ) {
      out.push(`--${named[0]}=${next}`)
      index++
    } else {
      out.push(arg)
    }
  }
  return out
}

/**
 * Parses a command's arguments strictly (unknown options and missing values are usage errors).
 *
 * @param spec - The command.
 * @param argv - The arguments after the command word.
 * @returns The values and positionals, or `'help'` when `--help`/`-h` was given.
 * @throws {@link CliError} `USAGE` with the command's name and what was wrong.
 */
export function parseCommandArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs | 'help' {
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    const result = parseArgs({
      args: joinDashValues(spec, argv),
      options: { ...spec.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    })
    parsed = { values: result.values, positionals: result.positionals }
  } catch (error) {
    throw usageError(
      `${spec.name}: ${describeParseError(spec, error, argv)}; run agent-ledger ${spec.name} --help`,
    )
  }
  if (parsed.values['help'] === true) return 'help'
  const { positionals } = parsed
  if (
    positionals.length !== spec.positionals.length &&
    !(spec.positionalsOptional === true && positionals.length === 0)
  ) {
    const expected = spec.positionals.length === 0 ? 'no arguments' : spec.positionals.join(' ')
    const found =
      positionals.length === 0 ? 'none' : positionals.map((value) => JSON.stringify(value)).join(' ')
    throw usageError(
      `${spec.name}: expected ${expected}, found ${found}; run agent-ledger ${spec.name} --help`,
    )
  }
  return { values: parsed.values as ParsedArgs['values'], positionals }
}

/**
 * A boolean option's value.
 *
 * @param args - Parsed arguments.
 * @param name - The option.
 * @returns True when given.
 */
export function flag(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true
}

/**
 * A string option's value.
 *
 * @param args - Parsed arguments.
 * @param name - The option.
 * @returns The value, or undefined when not given.
 */
export function text(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name]
  return typeof value === 'string' ? value : undefined
}

/**
 * A required string option's value.
 *
 * @param args - Parsed arguments.
 * @param request - The command and the option.
 * @returns The value.
 * @throws {@link CliError} `USAGE` when it is missing.
 */
export function requiredText(
  args: ParsedArgs,
  request: { readonly command: string; readonly name: string },
): string {
  const value = text(args, request.name)
  if (value === undefined) {
    throw usageError(
      `${request.command}: expected --${request.name} <value>, found none; run agent-ledger ${request.command} --help`,
    )
  }
  return value
}

/**
 * A non-negative integer option (a seq, a count).
 *
 * @param args - Parsed arguments.
 * @param request - The command and the option.
 * @returns The number, or undefined when not given.
 * @throws {@link CliError} `USAGE` when the value is not a non-negative integer.
 */
export function seqOption(
  args: ParsedArgs,
  request: { readonly command: string; readonly name: string },
): number | undefined {
  const value = text(args, request.name)
  if (value === undefined) return undefined
  const number = /^(0|[1-9][0-9]*)$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(number)) {
    throw usageError(
      `${request.command}: expected --${request.name} to be a non-negative integer, found ${JSON.stringify(value)}`,
    )
  }
  return number
}
