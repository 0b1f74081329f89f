/**
 * Every relative link in every Markdown file of the repository points at a file or
 * directory that exists inside the repository (not `../shared/...`, not a moved file), and
 * every file a package README links inside its own package is published with it (listed in
 * `files`), so the link also works on npm.
 *
 * Web links (`http:`, `https:`, `mailto:`) and same-page anchors are not followed. Links
 * inside code spans and fenced blocks are text, not links.
 *
 * Usage: `tsx tooling/check-links.ts` (exit 1 on any broken link; part of `pnpm test`).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')

/** One link target found in a Markdown text. */
export interface MarkdownLink {
  readonly line: number
  readonly target: string
}

/**
 * The link and image targets of a Markdown text (inline `[a](b)` and definitions `[a]: b`),
 * outside fenced blocks and code spans.
 *
 * @param markdown - The text.
 */
export function markdownLinks(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = []
  let fence: string | null = null
  markdown.split('\n').forEach((raw, index) => {
    const opener = /^ {0,3}(`{3,}|~{3,})/.exec(raw)
    if (opener !== null) {
      if (fence === null) fence = opener[1]!
      else if (raw.trim().startsWith(fence)) fence = null
      return
    }
    if (fence !== null) return
    const line = raw.replace(/`[^`]*`/g, '')
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ line: index + 1, target: match[1]! })
    }
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line)
    if (definition !== null) links.push({ line: index + 1, target: definition[1]! })
  })
  return links
}

function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')
}

interface PackageFiles {
  readonly directory: string
  readonly files: readonly string[]
}

/** The `files` list of the public package containing `path`, if any. */
function owningPackage(path: string): PackageFiles | null {
  const parts = relative(root, path).split(sep)
  if (parts[0] !== 'packages' || parts.length < 3) return null
  const directory = join(root, 'packages', parts[1]!)
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
    private?: boolean
    files?: string[]
  }
  if (manifest.private === true || manifest.files === undefined) return null
  return { directory, files: manifest.files }
}

/** True when npm would publish `path` (in `files`, or always included). */
function isPublished(owner: PackageFiles, path: string): boolean {
  const inside = relative(owner.directory, path).split(sep).join('/')
  if (/^(package\.json|README(\..*)?|LICEN[CS]E(\..*)?)$/i.test(inside)) return true
  return owner.files.some((entry) => {
    const clean = entry.replace(/^\.\//, '').replace(/\/$/, '')
    return inside === clean || inside.startsWith(`${clean}/`)
  })
}

/**
 * Checks the links of the given Markdown files.
 *
 * @param files - Absolute paths of Markdown files inside the repository.
 * @returns One line per broken link.
 */
export function checkLinks(files: readonly string[]): string[] {
  const problems: string[] = []
  for (const file of files) {
    const shown = relative(root, file)
    for (const link of markdownLinks(readFileSync(file, 'utf8'))) {
      if (isExternal(link.target)) continue
      const path = decodeURIComponent(link.target.replace(/[#?].*$/, ''))
      if (path === '') continue
      const absolute = path.startsWith('/') ? join(root, path) : resolve(dirname(file), path)
      const inside = relative(root, absolute)
      if (inside.startsWith('..') || inside.startsWith(sep)) {
        problems.push(
          `${shown}:${link.line}: links ${link.target}, outside the repository (a contributor cannot reach it: move what it needs into docs/)`,
        )
        continue
      }
      if (!existsSync(absolute)) {
        problems.push(`${shown}:${link.line}: links ${link.target}, which does not exist`)
        continue
      }
      const owner = owningPackage(file)
      if (
        owner !== null &&
        relative(owner.directory, absolute).split(sep)[0] !== '..' &&
        !isPublished(owner, absolute)
      ) {
        problems.push(
          `${shown}:${link.line}: links ${link.target}, which is not in the package's "files": the link breaks on npm`,
        )
      }
    }
  }
  return problems
}

/** Every Markdown file git tracks (or would track: untracked, not ignored). */
export function repositoryMarkdown(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((line) => line !== '' && existsSync(join(root, line)))
    .map((line) => join(root, line))
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = repositoryMarkdown()
  const problems = checkLinks(files)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`check-links: ${problems.length} broken link(s)`)
    process.exit(1)
  }
  console.log(
    `check-links: every relative link in ${files.length} Markdown files resolves inside the repository`,
  )
}
