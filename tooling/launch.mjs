/**
 * Runs a TypeScript entry of the workspace from a checkout, fast: `node tooling/launch.mjs
 * <entry.ts> [args...]` (the root scripts `pnpm agent-ledger`, `pnpm mini-agent`, ...).
 *
 * The entry is bundled once with esbuild (the `@agent-ledger/source` condition, so sibling
 * packages come from their sources as under tsx; third-party packages stay external, imported
 * by their resolved paths) into `node_modules/.cache/agent-ledger/<entry>.mjs`, beside a
 * manifest of every input file and every input directory with its mtime and size. A start
 * stats those (a few milliseconds) and imports the bundle in this same process, so argv, exit
 * codes, stdin/stdout/TTY and signals are the entry's own; when any input changed, or a file
 * was added to or removed from an input's directory, it rebuilds first (~1 s).
 *
 * Each module's `import.meta.url` is its source file's URL (rewritten at bundle time), so
 * `new URL('../package.json', import.meta.url)` reads what it reads under tsx. A child the
 * entry starts as `process.execPath ...process.execArgv <file.ts>` runs through this launcher
 * too: `process.execArgv` ends with this file.
 *
 * Concurrent starts never read a half-written bundle: the bundle and then the manifest are
 * written under temporary names and renamed into place.
 *
 * Plain JavaScript on purpose: it needs no loader.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { createRequire, isBuiltin } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const LAUNCHER = fileURLToPath(import.meta.url)
const ROOT = resolve(dirname(LAUNCHER), '..')
const CACHE = join(ROOT, 'node_modules', '.cache', 'agent-ledger')
const CONDITION = '@agent-ledger/source'
const require = createRequire(import.meta.url)
// Part of every manifest: a change to this file or to esbuild rebuilds everything.
const FORMAT = 1

function stamp(path) {
  try {
    const stats = statSync(path)
    return `${stats.mtimeMs}:${stats.size}`
  } catch {
    return 'missing'
  }
}

function cacheName(entry) {
  return relative(ROOT, entry)
    .replaceAll(/[\\/]/g, '__')
    .replace(/\.[cm]?tsx?$/, '')
}

function readManifest(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

function isFresh(manifest) {
  if (manifest === undefined || manifest.format !== FORMAT || manifest.launcher !== stamp(LAUNCHER))
    return false
  for (const [path, recorded] of Object.entries(manifest.files)) {
    if (stamp(join(ROOT, path)) !== recorded) return false
  }
  return true
}

/** esbuild plugin: third-party imports external by resolved path; `import.meta.url` per source file. */
function workspacePlugin() {
  return {
    name: 'agent-ledger-launch',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === 'resolving' || isBuiltin(args.path)) return undefined
        if (args.path.startsWith('@agent-ledger/')) return undefined
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: 'resolving',
        })
        if (resolved.errors.length > 0) return { errors: resolved.errors }
        return { path: pathToFileURL(resolved.path).href, external: true }
      })
      build.onLoad({ filter: /\.[cm]?tsx?$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8')
        const contents = source.includes('import.meta.url')
          ? source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          : source
        return { contents, loader: args.path.endsWith('x') ? 'tsx' : 'ts' }
      })
    },
  }
}

async function build(entry, bundle, manifestFile) {
  const esbuild = await import('esbuild')
  const result = await esbuild
    .build({
      entryPoints: [entry],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: `node${process.versions.node}`,
      conditions: [CONDITION],
      sourcemap: 'linked',
      sourcesContent: false,
      metafile: true,
      write: false,
      logLevel: 'silent',
      outfile: bundle,
      plugins: [workspacePlugin()],
    })
    .catch((error) => {
      const errors = error.errors ?? []
      const text = esbuild.formatMessagesSync(errors, { kind: 'error', color: process.stderr.isTTY })
      process.stderr.write(`launch: cannot bundle ${relative(ROOT, entry)}:\n${text.join('')}`)
      process.exit(1)
    })
  const inputs = Object.keys(result.metafile.inputs).map((input) => join(ROOT, input))
  // The lockfile and install state (third-party paths are baked in), esbuild itself.
  const files = {
    'pnpm-lock.yaml': stamp(join(ROOT, 'pnpm-lock.yaml')),
    'node_modules/.modules.yaml': stamp(join(ROOT, 'node_modules', '.modules.yaml')),
    [relative(ROOT, require.resolve('esbuild/package.json'))]: stamp(require.resolve('esbuild/package.json')),
  }
  for (const input of inputs) {
    files[relative(ROOT, input)] = stamp(input)
    // A directory's mtime changes when an entry is added or removed: a new file that could
    // change what an import resolves to.
    files[relative(ROOT, dirname(input))] = stamp(dirname(input))
    // The package.json that decides how its imports resolve (exports, conditions).
    for (let directory = dirname(input); directory.startsWith(ROOT); directory = dirname(directory)) {
      const manifest = join(directory, 'package.json')
      files[relative(ROOT, manifest)] = stamp(manifest)
      if (files[relative(ROOT, manifest)] !== 'missing' || directory === ROOT) break
    }
  }
  const suffix = `.${process.pid}.${Date.now()}.tmp`
  mkdirSync(CACHE, { recursive: true })
  // outputFiles: the map (<bundle>.map), then the bundle, which names the map last.
  for (const output of [...result.outputFiles].sort((a, b) => (a.path === bundle) - (b.path === bundle))) {
    writeFileSync(output.path + suffix, output.contents)
    renameSync(output.path + suffix, output.path)
  }
  const manifest = { format: FORMAT, esbuild: esbuild.version, launcher: stamp(LAUNCHER), files }
  writeFileSync(manifestFile + suffix, `${JSON.stringify(manifest, null, 1)}\n`)
  renameSync(manifestFile + suffix, manifestFile)
}

const [target, ...args] = process.argv.slice(2)
if (target === undefined) {
  process.stderr.write('usage: node tooling/launch.mjs <entry.ts> [args...]\n')
  process.exit(2)
}
const entry = resolve(target)
const bundle = join(CACHE, `${cacheName(entry)}.mjs`)
const manifestFile = join(CACHE, `${cacheName(entry)}.json`)
if (!isFresh(readManifest(manifestFile))) await build(entry, bundle, manifestFile)
process.setSourceMapsEnabled(true)
process.argv = [process.argv[0], entry, ...args]
process.execArgv = [...process.execArgv, LAUNCHER]
await import(pathToFileURL(bundle).href)
