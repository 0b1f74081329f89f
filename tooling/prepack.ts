/**
 * The `prepack` of every public package: builds the package (and, first, the workspace
 * packages it depends on) when its `dist/` is missing or older than its sources, so a
 * tarball never ships without the code its `exports` and `bin` name. A fresh `dist/` is
 * left alone: the gate builds before it packs, and rebuilding there would race with the
 * tests reading `dist/` in parallel.
 *
 * Usage (from a package directory): `tsx ../../tooling/prepack.ts`.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')

interface Manifest {
  readonly name: string
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly scripts?: Record<string, string>
}

function readManifest(directory: string): Manifest {
  return JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as Manifest
}

/** Newest (or oldest) modification time of the files under `directory`, recursively. */
function mtimes(directory: string): number[] {
  if (!existsSync(directory)) return []
  const times: number[] = []
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) times.push(statSync(join(entry.parentPath, entry.name)).mtimeMs)
  }
  return times
}

/** True when `dist/` exists and no source or config file is newer than its oldest file. */
export function isBuildFresh(directory: string): boolean {
  const built = mtimes(join(directory, 'dist'))
  if (built.length === 0) return false
  const inputs = [
    ...mtimes(join(directory, 'src')),
    ...['package.json', 'tsconfig.json', 'tsconfig.build.json']
      .map((name) => join(directory, name))
      .filter((file) => existsSync(file))
      .map((file) => statSync(file).mtimeMs),
  ]
  return Math.max(...inputs) <= Math.min(...built)
}

/** The workspace packages under `packages/`, by name. */
function workspacePackages(): Map<string, string> {
  const byName = new Map<string, string>()
  for (const entry of readdirSync(join(root, 'packages'))) {
    const directory = join(root, 'packages', entry)
    if (existsSync(join(directory, 'package.json'))) byName.set(readManifest(directory).name, directory)
  }
  return byName
}

/** Builds `directory` after its workspace dependencies, each only when stale. */
function buildWithDependencies(directory: string, byName: Map<string, string>, done: Set<string>): void {
  if (done.has(directory)) return
  done.add(directory)
  const manifest = readManifest(directory)
  for (const name of Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })) {
    const dependency = byName.get(name)
    if (dependency !== undefined) buildWithDependencies(dependency, byName, done)
  }
  if (manifest.scripts?.build === undefined || isBuildFresh(directory)) return
  console.error(`prepack: building ${manifest.name} (dist is missing or older than src)`)
  execFileSync('pnpm', ['run', 'build'], { cwd: directory, stdio: ['ignore', 'inherit', 'inherit'] })
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWithDependencies(process.cwd(), workspacePackages(), new Set())
}
