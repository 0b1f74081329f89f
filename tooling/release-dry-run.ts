/**
 * A dry run of the release path: shows the pending changesets, packs every public package
 * (each builds itself first, through its `prepack`), refuses any tarball that lacks a file
 * its `exports` or `bin` name, then asks pnpm to publish with `--dry-run` (packs and
 * reports, uploads nothing).
 *
 * `tsx tooling/release-dry-run.ts --check A.tgz [B.tgz...]` only checks the given tarballs.
 * Exits 1 when a tarball is incomplete.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { checkTarball } from './release/check-tarball.ts'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')

/** Prints what each tarball lacks; true when every one is complete. */
function checkAll(tarballs: readonly string[]): boolean {
  let complete = true
  for (const tarball of tarballs) {
    const report = checkTarball(tarball)
    if (report.missing.length === 0) {
      console.log(`release: ${report.name}: every file its exports and bin name is packed`)
      continue
    }
    complete = false
    console.error(
      `release: refusing ${report.name}: the tarball lacks ${report.missing.join(', ')}, which its exports/bin name (was it packed without a build? run \`pnpm build\`, or pack through pnpm so its prepack builds it)`,
    )
  }
  return complete
}

const checkIndex = process.argv.indexOf('--check')
if (checkIndex !== -1) {
  const tarballs = process.argv.slice(checkIndex + 1)
  if (tarballs.length === 0) {
    console.error('release: --check expects one or more .tgz paths, found none')
    process.exit(2)
  }
  process.exit(checkAll(tarballs) ? 0 : 1)
}

execFileSync('pnpm', ['changeset', 'status', '--verbose'], { cwd: root, stdio: 'inherit' })
const work = mkdtempSync(join(tmpdir(), 'agent-ledger-release-'))
let complete = false
try {
  execFileSync('pnpm', ['-r', '--filter', './packages/*', 'pack', '--pack-destination', work], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const tarballs = readdirSync(work)
    .filter((name) => name.endsWith('.tgz'))
    .map((name) => join(work, name))
  complete = checkAll(tarballs)
} finally {
  rmSync(work, { recursive: true, force: true })
}
if (!complete) process.exit(1)
execFileSync(
  'pnpm',
  ['-r', '--filter', './packages/*', 'publish', '--dry-run', '--no-git-checks', '--access', 'public'],
  { cwd: root, stdio: 'inherit' },
)
