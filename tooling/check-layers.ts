/**
 * The layer check: one literal table of allowed package edges, enforced over every
 * package.json and every import in src/. Changing the architecture means editing
 * ALLOWED_EDGES below, in review, where everyone sees it.
 *
 * Run: `pnpm layers` (part of `pnpm test`). Exits 1 and says what to do instead on any
 * violation.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Package → the @agent-ledger packages it may import. Nothing else is allowed. */
export const ALLOWED_EDGES: Readonly<Record<string, readonly string[]>> = {
  'session-events': [],
  'loop-repair': ['session-events'],
  'session-projection': ['session-events', 'loop-repair'],
  'session-store': ['session-events', 'session-projection', 'loop-repair'],
  'session-store-jsonl': ['session-events', 'session-projection', 'loop-repair', 'session-store'],
  'session-store-postgres': ['session-events', 'session-projection', 'loop-repair', 'session-store'],
  // Encryption at rest over node:crypto (the core takes it as its `encryption` option). The
  // backends are devDependencies only: its tests run the conformance suite encrypted on both.
  encryption: ['session-events', 'session-store', 'session-store-jsonl', 'session-store-postgres'],
  import: ['session-events', 'loop-repair', 'session-projection'],
  cli: [
    'session-events',
    'session-projection',
    'loop-repair',
    'session-store',
    'session-store-jsonl',
    'session-store-postgres',
    'import',
    'encryption',
  ],
  // The adapters take the core's SessionStore/SessionWriter types (session-store is their peer
  // dependency: one instance, the caller's). The backends are devDependencies only: their tests
  // run the frameworks over the core on a JSONL root, its memory backend and PostgreSQL. Their
  // src/ imports session-store types only, never a backend.
  'ai-sdk': [
    'session-events',
    'session-projection',
    'loop-repair',
    'session-store',
    'session-store-jsonl',
    'session-store-postgres',
  ],
  'openai-agents': [
    'session-events',
    'session-projection',
    'session-store',
    'session-store-jsonl',
    'session-store-postgres',
  ],
  // The Claude Agent SDK store: import's source-record event (its mapping of Claude Code
  // transcripts); the CLI is a devDependency (its tests read a mirrored session with it).
  'claude-agent-sdk': [
    'session-events',
    'session-store',
    'import',
    'session-store-jsonl',
    'session-store-postgres',
    'cli',
  ],
  // The chaos kit: workers run the three adapters (the AI SDK, OpenAI Agents, the Claude Agent
  // SDK store) over the JSONL and PostgreSQL stores; the checker reads repair codes.
  chaos: [
    'loop-repair',
    'session-events',
    'session-store',
    'session-store-jsonl',
    'session-store-postgres',
    'ai-sdk',
    'openai-agents',
    'claude-agent-sdk',
  ],
  demo: [
    'session-events',
    'session-projection',
    'loop-repair',
    'session-store',
    'session-store-jsonl',
    'session-store-postgres',
    'cli',
  ],
}

/** Packages that do no I/O, read no clock and use no randomness. */
export const PURE_PACKAGES: readonly string[] = [
  'session-events',
  'session-projection',
  'loop-repair',
  'import',
  'session-store',
]

const IMPURE_PATTERNS: readonly { pattern: RegExp; instead: string }[] = [
  { pattern: /\bDate\.now\s*\(/, instead: 'take the time as data (an injected clock) from the caller' },
  { pattern: /\bnew Date\s*\(\s*\)/, instead: 'take the time as data (an injected clock) from the caller' },
  { pattern: /\bMath\.random\s*\(/, instead: 'take ids or seeds as data from the caller' },
  { pattern: /\bcrypto\.randomUUID\s*\(/, instead: 'take ids as data from the caller' },
  { pattern: /\bperformance\.now\s*\(/, instead: 'take the time as data from the caller' },
  { pattern: /\bprocess\.(env|hrtime|cwd|argv)\b/, instead: 'take the value as an option from the caller' },
]

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')

interface Violation {
  file: string
  message: string
}

function listFiles(directory: string): string[] {
  let entries: string[]
  try {
    entries = readdirSync(directory)
  } catch {
    return []
  }
  const files: string[] = []
  for (const entry of entries) {
    const path = join(directory, entry)
    if (statSync(path).isDirectory()) files.push(...listFiles(path))
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(entry)) files.push(path)
  }
  return files
}

function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1')
}

/**
 * True when `subpath` is a documented entry point of `@agent-ledger/<target>`: a key of its
 * package.json `exports` (e.g. `./format`), not a file reached around the map.
 */
function isDocumentedSubpath(target: string, subpath: string): boolean {
  for (const group of ['packages', 'apps']) {
    const manifestPath = join(root, group, target, 'package.json')
    try {
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { exports?: Record<string, unknown> }
      return subpath !== 'package.json' && Object.hasOwn(manifest.exports ?? {}, `./${subpath}`)
    } catch {
      // not in this group
    }
  }
  return false
}

/** Checks one workspace directory; returns every violation found. */
export function checkPackage(directory: string, name: string): Violation[] {
  const violations: Violation[] = []
  const allowed = ALLOWED_EDGES[name]
  const packageJsonPath = join(directory, 'package.json')
  if (allowed === undefined) {
    return [
      {
        file: relative(root, packageJsonPath),
        message: `package "${name}" has no row in ALLOWED_EDGES; add one to tooling/check-layers.ts saying which packages it may use`,
      },
    ]
  }
  const manifest = JSON.parse(readFileSync(packageJsonPath, 'utf8')) as Record<string, unknown>
  for (const field of ['dependencies', 'peerDependencies', 'devDependencies', 'optionalDependencies']) {
    const deps = (manifest[field] ?? {}) as Record<string, string>
    for (const dep of Object.keys(deps)) {
      if (!dep.startsWith('@agent-ledger/')) continue
      const target = dep.slice('@agent-ledger/'.length)
      if (!allowed.includes(target)) {
        violations.push({
          file: relative(root, packageJsonPath),
          message: `${field} names ${dep}, but ${name} may only depend on [${allowed.join(', ')}]; move the shared code down a layer or change ALLOWED_EDGES in review`,
        })
      }
    }
  }
  const pure = PURE_PACKAGES.includes(name)
  for (const file of listFiles(join(directory, 'src'))) {
    const source = stripComments(readFileSync(file, 'utf8'))
    const importPattern =
      /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g
    for (const match of source.matchAll(importPattern)) {
      const specifier = match[1] ?? match[2] ?? match[3] ?? ''
      if (specifier.startsWith('@agent-ledger/')) {
        const [, target = '', ...rest] = specifier.split('/')
        if (rest.length > 0 && !isDocumentedSubpath(target, rest.join('/'))) {
          violations.push({
            file: relative(root, file),
            message: `deep import "${specifier}": import the package root @agent-ledger/${target} (or a subpath its package.json exports) and use its public API`,
          })
        }
        if (!allowed.includes(target)) {
          violations.push({
            file: relative(root, file),
            message: `imports @agent-ledger/${target}, but ${name} may only import [${allowed.join(', ')}]; move the code down a layer or change ALLOWED_EDGES in review`,
          })
        }
      } else if (
        pure &&
        (specifier.startsWith('node:') ||
          /^(fs|path|os|crypto|child_process|worker_threads|zlib)$/.test(specifier))
      ) {
        violations.push({
          file: relative(root, file),
          message: `imports "${specifier}", but ${name} is pure (no I/O); take the data as an argument, or put the I/O in @agent-ledger/session-store-jsonl`,
        })
      }
    }
    if (pure) {
      for (const { pattern, instead } of IMPURE_PATTERNS) {
        const found = pattern.exec(source)
        if (found) {
          violations.push({
            file: relative(root, file),
            message: `uses ${found[0].trim()} in the pure package ${name}; ${instead}`,
          })
        }
      }
    }
  }
  return violations
}

function main(): void {
  const violations: Violation[] = []
  let checked = 0
  for (const group of ['packages', 'apps']) {
    for (const entry of readdirSync(join(root, group))) {
      const directory = join(root, group, entry)
      if (!statSync(directory).isDirectory()) continue
      checked += 1
      violations.push(...checkPackage(directory, entry))
    }
  }
  for (const name of Object.keys(ALLOWED_EDGES)) {
    const exists = ['packages', 'apps'].some((group) => {
      try {
        return statSync(join(root, group, name)).isDirectory()
      } catch {
        return false
      }
    })
    if (!exists)
      violations.push({
        file: 'tooling/check-layers.ts',
        message: `ALLOWED_EDGES names "${name}", which no longer exists; remove its row`,
      })
  }
  if (violations.length > 0) {
    console.error(`layer check: ${violations.length} violation(s)`)
    for (const violation of violations) console.error(`  ${violation.file}: ${violation.message}`)
    process.exit(1)
  }
  console.log(`layer check: ${checked} packages follow the table in tooling/check-layers.ts`)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
