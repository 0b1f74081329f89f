import { execFile } from 'node:child_process'
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { isBuildFresh } from '../prepack.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const tsx = join(root, 'node_modules', '.bin', 'tsx')
let work: string

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'al-release-'))
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

function publicPackages(): { directory: string; manifest: Record<string, unknown> }[] {
  return readdirSync(join(root, 'packages'))
    .map((entry) => join(root, 'packages', entry))
    .map((directory) => ({
      directory,
      manifest: JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as Record<string, unknown>,
    }))
    .filter(({ manifest }) => manifest.private !== true)
}

/** Packs `package/` under `staging` the way npm lays a tarball out. */
function tarball(staging: string, name: string): Promise<string> {
  const file = join(work, name)
  return new Promise((resolve, reject) => {
    execFile('tar', ['-czf', file, '-C', staging, 'package'], (error) =>
      error ? reject(error) : resolve(file),
    )
  })
}

function dryRunCheck(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      tsx,
      [join(root, 'tooling', 'release-dry-run.ts'), '--check', file],
      { cwd: root },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr })
      },
    )
  })
}

/** An unbuilt copy of the CLI package: its manifest, sources and README, no dist. */
function unbuiltCopy(staging: string): void {
  const source = join(root, 'packages', 'cli')
  mkdirSync(join(staging, 'package'), { recursive: true })
  for (const name of ['package.json', 'README.md', 'src']) {
    cpSync(join(source, name), join(staging, 'package', name), { recursive: true })
  }
}

describe('packing', () => {
  it('every public package builds itself before it is packed (prepack)', () => {
    const packages = publicPackages()
    expect(packages.length).toBeGreaterThan(0)
    for (const { manifest } of packages) {
      const scripts = manifest.scripts as Record<string, string>
      expect(scripts.prepack, `${String(manifest.name)} has a prepack`).toContain('tooling/prepack.ts')
    }
  })

  it('prepack treats a missing or stale dist as needing a build, and a fresh one as done', () => {
    const directory = join(work, 'fresh')
    mkdirSync(join(directory, 'src'), { recursive: true })
    writeFileSync(join(directory, 'package.json'), '{"name":"x"}')
    writeFileSync(join(directory, 'src', 'index.ts'), 'export {}')
    expect(isBuildFresh(directory)).toBe(false)
    mkdirSync(join(directory, 'dist'))
    writeFileSync(join(directory, 'dist', 'index.js'), 'export {}')
    const past = new Date(Date.now() - 60_000)
    utimesSync(join(directory, 'src', 'index.ts'), past, past)
    utimesSync(join(directory, 'package.json'), past, past)
    expect(isBuildFresh(directory)).toBe(true)
    const future = new Date(Date.now() + 60_000)
    utimesSync(join(directory, 'src', 'index.ts'), future, future)
    expect(isBuildFresh(directory)).toBe(false)
  })

  it('release:dry-run refuses a tarball of an unbuilt package, naming what exports and bin lack', async () => {
    const staging = join(work, 'unbuilt')
    unbuiltCopy(staging)
    const result = await dryRunCheck(await tarball(staging, 'unbuilt.tgz'))
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('refusing @agent-ledger/cli')
    expect(result.stderr).toContain('./dist/index.js')
    expect(result.stderr).toContain('./dist/index.d.ts')
    expect(result.stderr).toContain('./dist/bin.js')
  })

  it('release:dry-run refuses a tarball missing only the bin, and accepts a complete one', async () => {
    const staging = join(work, 'built')
    unbuiltCopy(staging)
    mkdirSync(join(staging, 'package', 'dist'))
    for (const name of ['index.js', 'index.d.ts']) writeFileSync(join(staging, 'package', 'dist', name), '')
    const noBin = await dryRunCheck(await tarball(staging, 'no-bin.tgz'))
    expect(noBin.code).toBe(1)
    expect(noBin.stderr).toContain('./dist/bin.js')
    expect(noBin.stderr).not.toContain('./dist/index.js')
    writeFileSync(join(staging, 'package', 'dist', 'bin.js'), '')
    const complete = await dryRunCheck(await tarball(staging, 'complete.tgz'))
    expect(complete.stderr).toBe('')
    expect(complete.code).toBe(0)
    expect(complete.stdout).toContain('@agent-ledger/cli: every file its exports and bin name is packed')
  })
})
