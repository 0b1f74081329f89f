/**
 * Dropping a session's search index (`search.index`) when a maintenance step publishes a new
 * log in its directory (`compress`, `migrate`): the index is bound to the log it was built
 * from, so after the publish it only takes room. Best effort: the index is derived data, a
 * search never trusts one bound to another log (it is rebuilt or bypassed), and a failure
 * here must not fail the publish that already happened.
 */
import { join } from 'node:path'

import type { FsOps } from './fs-ops.ts'
import { SEARCH_INDEX_FILE_NAME } from './layout.ts'

/**
 * Removes `directory/search.index` if it is there; never throws.
 *
 * @param fs - The store's file system.
 * @param directory - The session directory.
 */
export async function dropSearchIndex(fs: FsOps, directory: string): Promise<void> {
  await fs.unlink(join(directory, SEARCH_INDEX_FILE_NAME)).catch(() => undefined)
}
