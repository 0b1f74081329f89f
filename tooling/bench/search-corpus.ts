/**
 * The corpus of the search benchmarks (`packages/session-store-jsonl/bench/search.bench.ts`,
 * `packages/session-store-postgres/bench/search.bench.ts`): sessions of the deterministic
 * agent session ({@link agentSessionInputs}: code-like words, tool calls, results of 40 B to
 * 2 KB), {@link SEARCH_SESSION_EVENTS} events each, written through the session core. Every
 * fourth session carries one user message holding the rare word {@link RARE_WORD} in its
 * middle: the query a person types to find "the session where X happened" (few hits, so a
 * page is not filled early: a scan reads the whole corpus).
 *
 * Size: `AGENT_LEDGER_SEARCH_MB` megabytes of log (default 16; `pnpm bench --large`: 1024,
 * the 1 GB).
 */
import { agentSessionInputs } from './agent-session.ts'
import type { BenchEventInput } from './agent-session.ts'

/** The word planted in every fourth session. */
export const RARE_WORD = 'zanzibar'
/** Events per session. */
const SEARCH_SESSION_EVENTS = 2000
/** Events per flush while loading. */
const FLUSH_EVERY = 500

/** The corpus size in bytes of log: `AGENT_LEDGER_SEARCH_MB`, else 16 MB (1024 MB with `--large`). */
export function corpusBytes(scale: 'default' | 'large'): number {
  const fromEnv = Number(process.env.AGENT_LEDGER_SEARCH_MB ?? '')
  const mb = Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : scale === 'large' ? 1024 : 16
  return Math.round(mb * 1024 * 1024)
}

/** Session `index`'s id. */
function corpusSessionId(index: number): string {
  return `search-${String(index).padStart(5, '0')}`
}

function* sessionInputs(index: number): Generator<BenchEventInput> {
  let count = 0
  let planted = index % 4 !== 0
  for (const input of agentSessionInputs<BenchEventInput>({
    surface: () => [],
    compact: () => [],
    seed: 1000 + index,
    compactEvery: 0,
    sizes: {
      system: 600,
      user: [30, 150],
      toolResultSmall: [40, 400],
      toolResultLarge: [400, 1600],
      answer: [40, 200],
      summary: 300,
    },
  })) {
    if (count >= SEARCH_SESSION_EVENTS) return
    yield input
    count += 1
    if (!planted && count >= SEARCH_SESSION_EVENTS / 2 && input.type === 'turn/start') {
      planted = true
      yield {
        type: 'user/message',
        data: { message: { role: 'user', content: `The ${RARE_WORD} migration broke the deploy of run ${index}` } },
      }
      count += 1
    }
  }
}

/** How {@link writeCorpus} writes: sessions at once, events per flush. */
export interface CorpusWriting {
  /** Sessions written at once (default 1); the size is checked after each group. */
  readonly parallel?: number
  /** Events per flush (default {@link FLUSH_EVERY}). */
  readonly flushEvery?: number
}

/**
 * Writes sessions through `store` until `sizeOf()` reaches `bytes`.
 *
 * @param store - The store to fill.
 * @param bytes - The corpus size wanted.
 * @param sizeOf - The bytes written so far (log files, or the lines' UTF-8 bytes), given the
 *   ids of the sessions written since the last call.
 * @param writing - Sessions at once and events per flush (the same lines either way: a
 *   larger group can only add up to `parallel - 1` sessions past the size).
 * @returns How many sessions, and how many of them hold the rare word.
 */
export async function writeCorpus<TInput>(
  store: {
    create(request: { readonly id: string }): Promise<{
      append(input: TInput): unknown
      flush(): Promise<unknown>
      close(): Promise<unknown>
    }>
  },
  bytes: number,
  sizeOf: (written: readonly string[]) => Promise<number>,
  writing: CorpusWriting = {},
): Promise<{ sessions: number; planted: number }> {
  const parallel = writing.parallel ?? 1
  const flushEvery = writing.flushEvery ?? FLUSH_EVERY
  const writeOne = async (index: number): Promise<string> => {
    const id = corpusSessionId(index)
    const writer = await store.create({ id })
    let pending = 0
    for (const input of sessionInputs(index)) {
      writer.append(input as unknown as TInput)
      pending += 1
      if (pending === flushEvery) {
        await writer.flush()
        pending = 0
      }
    }
    await writer.close()
    return id
  }
  let sessions = 0
  let written: string[] = []
  while (sessions === 0 || (await sizeOf(written)) < bytes) {
    const group = Array.from({ length: parallel }, (_, offset) => sessions + offset)
    written = await Promise.all(group.map(writeOne))
    sessions += parallel
  }
  return { sessions, planted: Math.ceil(sessions / 4) }
}
