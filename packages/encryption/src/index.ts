/**
 * @packageDocumentation
 * Encryption at rest for agent-ledger session stores (Node): pass `createEncryption({ keys,
 * keyStore })` as `createSessionStore({ backend, encryption })` (or `createJsonlStore`'s).
 * Event data is sealed with AES-256-GCM under a per-session data key; the data key is wrapped
 * by a key provider (an environment key, a key file, or a KMS's wrap/unwrap) and kept in a key
 * store outside the log. See FORMAT.md section 17 and the ADR 2026-12-02-encryption-at-rest.
 */
export { createEncryption } from './encryption.ts'
export type { EncryptionOptions, RekeyReport, StoreEncryption } from './encryption.ts'
export { envKeyProvider, keyFileProvider, localKeyProvider } from './key-provider.ts'
export type { KeyProvider, WrapContext } from './key-provider.ts'
export { fileKeyStore, memoryKeyStore } from './key-store.ts'
export type { DataKeyRecord, KeyStore } from './key-store.ts'
