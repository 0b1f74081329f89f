/**
 * The worker as one ESM bundle (`worker.ts` and the agent-ledger sources it imports, built with
 * esbuild, the transformer tsx itself uses, reached through tsx's dependency; other packages
 * stay external and load from this package's node_modules), built once per driver process: a
 * worker's start is most of its cost, and a plain `node bundle.mjs` skips tsx's per-module
 * loader work (thousands of worker starts in a full run).
 */
import { mkdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

interface ResolveArgs {
  readonly path: string
  readonly resolveDir: string
  readonly kind: string
  readonly pluginData?: unknown
}

interface PluginBuild {
  onResolve(filter: { filter: RegExp }, resolve: (args: ResolveArgs) => unknown): void
  resolve(
    path: string,
    options: { resolveDir: string; kind: string; pluginData: unknown },
  ): Promise<{ path: string; errors: readonly unknown[] }>
}

const RESOLVING = Symbol('resolving')

/**
 * Third-party packages stay external, each by the absolute path it resolves to from its
 * importer (a package the worker reaches only through a sibling, `pg`, is not in this
 * package's node_modules).
 */
function externalizeThirdParty(build: PluginBuild): void {
  build.onResolve({ filter: /^[^./]/ }, async (args) => {
    if (args.path.startsWith('@agent-ledger/') || args.pluginData === RESOLVING) return undefined
    if (args.path.startsWith('node:')) return { path: args.path, external: true }
    const found = await build.resolve(args.path, {
      resolveDir: args.resolveDir,
      kind: args.kind,
      pluginData: RESOLVING,
    })
    if (found.errors.length > 0) return { path: args.path, external: true }
    return { path: pathToFileURL(found.path).href, external: true }
  })
}

interface Esbuild {
  readonly build: (options: Record<string, unknown>) => Promise<unknown>
}

let built: Promise<string> | undefined

/** The worker bundle's path, built on first use and removed when this process exits. */
export function workerBundle(): Promise<string> {
  built ??= (async () => {
    const require = createRequire(import.meta.url)
    const esbuild = pathToFileURL(createRequire(require.resolve('tsx')).resolve('esbuild')).href
    const loaded = (await import(esbuild)) as Esbuild & { default?: Esbuild }
    const build = loaded.build ?? loaded.default!.build
    const directory = fileURLToPath(new URL('../node_modules/.cache/chaos-worker/', import.meta.url))
    mkdirSync(directory, { recursive: true })
    const outfile = `${directory}worker-${process.pid}.mjs`
    await build({
      entryPoints: [fileURLToPath(new URL('./worker.ts', import.meta.url))],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      conditions: ['@agent-ledger/source'],
      logLevel: 'error',
      plugins: [{ name: 'third-party-external', setup: externalizeThirdParty }],
    })
    process.on('exit', () => rmSync(outfile, { force: true }))
    return outfile
  })()
  return built
}
