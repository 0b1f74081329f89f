/**
 * Checks a packed tarball against its own manifest: every file that `exports`, `bin`,
 * `main`, `types` and `module` name must be inside it. A package packed without a build
 * ships `src/*.ts` while its `exports` point at `./dist`: this catches that.
 */
import { execFileSync } from 'node:child_process'

/** What a tarball lacks. */
export interface TarballReport {
  /** The package name from the packed manifest. */
  readonly name: string
  /** Paths (as the manifest writes them, e.g. `./dist/index.js`) absent from the tarball. */
  readonly missing: readonly string[]
}

interface PackedManifest {
  readonly name?: string
  readonly exports?: unknown
  readonly bin?: string | Record<string, string>
  readonly main?: string
  readonly types?: string
  readonly module?: string
}

/** Every string leaf of an `exports` value (conditions and subpaths alike). */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(exportTargets)
}

/**
 * The files a manifest promises, normalised to tarball paths without `./`.
 *
 * @param manifest - The packed `package.json`.
 * @returns Pairs of (as written, normalised).
 */
function promisedFiles(manifest: PackedManifest): [string, string][] {
  const bin = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {})
  const written = [
    ...exportTargets(manifest.exports),
    ...bin,
    ...[manifest.main, manifest.types, manifest.module].filter((entry) => entry !== undefined),
  ]
  return [...new Set(written)].map((entry) => [entry, entry.replace(/^\.\//, '')])
}

/**
 * Compares the file list of a tarball with what its manifest promises.
 *
 * @param entries - The tarball's paths, with npm's `package/` prefix.
 * @param manifest - Its `package/package.json`, parsed.
 * @returns The package name and what is missing (empty when complete).
 */
function checkEntries(entries: readonly string[], manifest: PackedManifest): TarballReport {
  const files = new Set(entries.map((entry) => entry.replace(/^package\//, '')))
  const prefixes = [...files]
  const missing = promisedFiles(manifest)
    .filter(([, path]) => {
      if (!path.includes('*')) return !files.has(path)
      const [head = ''] = path.split('*')
      return !prefixes.some((file) => file.startsWith(head))
    })
    .map(([written]) => written)
  return { name: manifest.name ?? '(unnamed package)', missing }
}

/**
 * Reads a `.tgz` made by `pnpm pack` / `npm pack` and reports what it lacks.
 *
 * @param tarball - Path of the tarball.
 */
export function checkTarball(tarball: string): TarballReport {
  const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
  const manifest = JSON.parse(
    execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
  ) as PackedManifest
  return checkEntries(
    listing.split('\n').filter((line) => line !== ''),
    manifest,
  )
}
