/**
 * A dry run of the release path: shows the pending changesets, then asks pnpm to publish
 * every public package with `--dry-run` (packs and reports, uploads nothing). Run after
 * `pnpm build`.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
execFileSync('pnpm', ['changeset', 'status', '--verbose'], { cwd: root, stdio: 'inherit' })
execFileSync(
  'pnpm',
  ['-r', '--filter', './packages/*', 'publish', '--dry-run', '--no-git-checks', '--access', 'public'],
  { cwd: root, stdio: 'inherit' },
)
