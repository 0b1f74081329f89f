/**
 * Encryption at rest for the CLI's stores: the key provider and key store named by the
 * environment (`AGENT_LEDGER_KEYS` or `AGENT_LEDGER_KEY_FILE`, and `AGENT_LEDGER_KEY_STORE`),
 * or by `rekey`'s `--key-file`/`--key-store`. With them, every store a command opens reads
 * encrypted sessions and seals the sessions it creates (import, fork, copy, salvage).
 */
import { isAbsolute, resolve } from 'node:path'

import { createEncryption, fileKeyStore, keyFileProvider, localKeyProvider } from '@agent-ledger/encryption'
import type { StoreEncryption } from '@agent-ledger/encryption'

import { usageError } from './cli-error.ts'

/** Where the keys come from: a key file or the key set text, and the key store directory. */
export interface KeySources {
  readonly keyFile?: string | undefined
  readonly keyStore?: string | undefined
}

/**
 * The encryption option of the CLI's stores, or undefined when no key is configured.
 *
 * @param env - The environment.
 * @param cwd - Where relative paths are resolved.
 * @param given - Command-line sources (they win over the environment).
 * @returns The option, or undefined.
 * @throws {@link CliError} `USAGE` when a key is configured without a key store (or the reverse), or the key set is malformed.
 */
export function storeEncryption(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  given: KeySources = {},
): StoreEncryption | undefined {
  const keyFile = given.keyFile ?? nonEmpty(env['AGENT_LEDGER_KEY_FILE'])
  const keyText = keyFile === undefined ? nonEmpty(env['AGENT_LEDGER_KEYS']) : undefined
  const keyStore = given.keyStore ?? nonEmpty(env['AGENT_LEDGER_KEY_STORE'])
  if (keyFile === undefined && keyText === undefined) {
    if (keyStore === undefined) return undefined
    throw usageError(
      'expected a key with the key store: set AGENT_LEDGER_KEY_FILE (or AGENT_LEDGER_KEYS, or --key-file) beside AGENT_LEDGER_KEY_STORE, found only the key store',
    )
  }
  if (keyStore === undefined) {
    throw usageError(
      'expected a key store with the key: set AGENT_LEDGER_KEY_STORE (or --key-store) to the directory of wrapped data keys, found only the key',
    )
  }
  const at = (path: string): string => (isAbsolute(path) ? path : resolve(cwd, path))
  let keys
  try {
    keys =
      keyFile === undefined ? localKeyProvider(keyText!, 'AGENT_LEDGER_KEYS') : keyFileProvider(at(keyFile))
  } catch (error) {
    throw usageError(error instanceof Error ? error.message : String(error))
  }
  return createEncryption({ keys, keyStore: fileKeyStore(at(keyStore)) })
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}
