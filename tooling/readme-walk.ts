/**
 * Walks the root README's shell commands in a scratch clone and fails when they leave the tree
 * dirty: everything the README tells a newcomer to run must write only to ignored places
 * (`.mini-agent/` for the demo's sessions, workspace and exports).
 *
 * Which blocks are walked is said in the fence: a ```` ```sh walk ```` block is walked, line by
 * line; a plain ```` ```sh ```` block is not (the setup block installs and runs the gate itself;
 * the fleet block needs a PostgreSQL server and other hosts). A walked block may hold only
 * `pnpm mini-agent ...` and `pnpm agent-ledger ...` lines (and blank or `#` lines): anything
 * else is refused rather than skipped, so the walk cannot silently cover less than it says.
 * `<id>` in a line is the id of the session the walk created (the `session <id>: ...` line
 * `mini-agent run` prints).
 *
 * The clone is `git clone` of the repository's HEAD into a temporary directory, set up with
 * `pnpm install --frozen-lockfile --offline`; the commands run there through `/bin/sh -c`, as
 * when pasted at the repository root. Afterwards `git status --porcelain --untracked-files=all`
 * must print nothing.
 *
 * Used by `tooling/readme-examples.ts` (part of `pnpm test` and `pnpm readme-examples`).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** One command of a walked block. */
export interface WalkStep {
  /** 1-based README line of the command. */
  readonly line: number
  readonly command: string
}

const SH_LANGUAGES = new Set(['sh', 'bash', 'shell'])
const SH_ATTRIBUTES = new Set(['walk'])
const WALKABLE = /^pnpm (mini-agent|agent-ledger)(\s|$)/

/**
 * The commands of the ```` ```sh walk ```` blocks of a Markdown text, in order.
 *
 * @param markdown - The README.
 * @returns The steps; throws on an unknown attribute in a shell fence, or on a line of a walked
 *   block that is not a `pnpm mini-agent` / `pnpm agent-ledger` command.
 */
export function extractWalk(markdown: string): WalkStep[] {
  const lines = markdown.split('\n')
  const steps: WalkStep[] = []
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[index]!)
    if (open === null) continue
    const fence = open[1]!
    const info = open[2]!.trim()
    const [language = '', ...attributes] = info.split(/\s+/)
    let end = index + 1
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence)) end += 1
    if (SH_LANGUAGES.has(language)) {
      const unknown = attributes.filter((attribute) => !SH_ATTRIBUTES.has(attribute))
      if (unknown.length > 0) {
        throw new Error(
          `line ${index + 1}: unknown attribute ${unknown.map((word) => JSON.stringify(word)).join(', ')} in \`\`\`${info} (expected nothing or "walk")`,
        )
      }
      if (attributes.includes('walk')) {
        for (let line = index + 1; line < end; line += 1) {
          const command = lines[line]!.trim()
          if (command === '' || command.startsWith('#')) continue
          if (!WALKABLE.test(command)) {
            throw new Error(
              `line ${line + 1}: a \`\`\`sh walk block may hold only pnpm mini-agent / pnpm agent-ledger commands, found ${JSON.stringify(command)}`,
            )
          }
          steps.push({ line: line + 1, command })
        }
      }
    }
    index = end
  }
  return steps
}

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      '/bin/sh',
      ['-c', command],
      { cwd, env, timeout: timeoutMs, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null
        resolve({
          code,
          stdout,
          stderr: error !== null && code === null ? `${stderr}${error.message}` : stderr,
        })
      },
    )
  })
}

function tail(text: string): string {
  return text.trim().split('\n').slice(-8).join('\n')
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

/** Options of {@link walkReadme}. */
export interface WalkOptions {
  /** The repository whose HEAD is cloned. */
  readonly repository: string
  /** The README inside the clone (default `README.md`). */
  readonly readme?: string
  /** Per command; a hung command fails the walk instead of hanging the gate (default 10 min). */
  readonly timeoutMs?: number
}

/**
 * Clones the repository's HEAD, installs it offline, runs the README's walked commands there,
 * and checks that the tree is clean afterwards.
 *
 * @param options - The repository, the README and the per-command timeout.
 * @returns One line per problem (empty when the walk ran and left nothing behind), and the
 *   number of commands run.
 */
export async function walkReadme(options: WalkOptions): Promise<{ problems: string[]; ran: number }> {
  const timeoutMs = options.timeoutMs ?? 600_000
  const readme = options.readme ?? 'README.md'
  const scratch = mkdtempSync(join(tmpdir(), 'al-readme-walk-'))
  const clone = join(scratch, 'repo')
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.AGENT_LEDGER_STORE
  const problems: string[] = []
  let ran = 0
  try {
    const cloned = await sh(
      `git clone --quiet ${shellQuote(options.repository)} ${shellQuote(clone)}`,
      scratch,
      env,
      timeoutMs,
    )
    if (cloned.code !== 0)
      return { problems: [`git clone of ${options.repository} failed: ${tail(cloned.stderr)}`], ran }
    const installed = await sh('pnpm install --frozen-lockfile --offline', clone, env, timeoutMs)
    if (installed.code !== 0) {
      return {
        problems: [
          `pnpm install --frozen-lockfile --offline in the clone failed: ${tail(installed.stderr || installed.stdout)}`,
        ],
        ran,
      }
    }
    let steps: WalkStep[]
    try {
      steps = extractWalk(readFileSync(join(clone, readme), 'utf8'))
    } catch (error) {
      return { problems: [`${readme}: ${(error as Error).message}`], ran }
    }
    if (steps.length === 0) return { problems: [`${readme}: no \`\`\`sh walk block to walk`], ran }
    let id: string | undefined
    for (const step of steps) {
      if (step.command.includes('<id>') && id === undefined) {
        problems.push(
          `${readme}:${step.line}: \`${step.command}\` needs <id>, but no earlier command printed "session <id>: ..."`,
        )
        break
      }
      const command = id === undefined ? step.command : step.command.replaceAll('<id>', shellQuote(id))
      const result = await sh(command, clone, env, timeoutMs)
      ran += 1
      if (result.code !== 0) {
        problems.push(
          `${readme}:${step.line}: \`${command}\` ${result.code === null ? 'did not finish' : `exited ${result.code}`}: ${tail(result.stderr || result.stdout)}`,
        )
        break
      }
      id ??= /^session (\S+): /m.exec(result.stdout)?.[1]
    }
    const status = await sh('git status --porcelain --untracked-files=all', clone, env, timeoutMs)
    const dirty = status.stdout.split('\n').filter((line) => line.trim() !== '')
    if (status.code !== 0) problems.push(`git status in the clone failed: ${tail(status.stderr)}`)
    else if (dirty.length > 0) {
      problems.push(
        `${readme}: the walk left the tree dirty (write these to an ignored place, e.g. under .mini-agent/): ${dirty.map((line) => line.slice(3)).join(', ')}`,
      )
    }
    return { problems, ran }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
