import { IMPORTER_VERSION } from '@agent-ledger/import'
import { describe, expect, it } from 'vitest'

import { digestSources, importDigest } from './support/import-digest.ts'

/** The mapping version the digests were recorded with (every header carries it). */
const RECORDED_WITH_IMPORTER_VERSION = 2

/**
 * The log bytes `agent-ledger import` wrote before the import-speed work (validation fast
 * paths, cheaper copies, fewer folds): that work must not change one byte of them.
 *
 * How these were obtained: on `main` at 224c64e (before any of that work), from the
 * repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-branches.jsonl': 'dbced9ad33970cb6c5a0b0e037648f7ba344af78380cd9665cc9dd847f082f7f',
  'synthetic-claude-code-compaction.jsonl':
    '5a7da47c261bb70b1a7028a54bcac879ba0c7d9e7a65317feed8fcf0a9e1a79e',
  'synthetic-codex-compacted.jsonl': '0e3d67da44c422079e4025ec581af7c616ba0a830ef06647a4adee01309a1573',
  'synthetic-openhands-v0-condensation.jsonl':
    'b9969cfd8d7faa4ba4244739c1dbf2c4cbfd3129d01690f82d9a21c9a0f84a00',
  'synthetic-openhands-v1-condensation.jsonl':
    '11a1d14494962e0e10cacd7a63b6f23922afb9cfbe1a86f8f4ec3d879e36c1d5',
  'synthetic-openhands-v1-events.jsonl': '7c2a9e45534bd42cfacbff8d984dc1facee21a60bb432f774c90ded5a7dcec18',
  'synthetic-pi-v1.jsonl': 'af4b13a949b7de7b16f2b6717932ef333ecd460f551d0ea25c141dcbbd80e02b',
  'synthetic-pi-v2.jsonl': '287b07e30f95c528914f31b368c0f0feb7311ac3af3e137e2d9c2ceeeb078fb7',
  'synthetic-pi-v3-tree.jsonl': '0e621323cd79469dd578a100e7e27750c2c711b6d367369a10503e739585c0fe',
  'shared-claude-code-short.jsonl': '972950c15b78bc42305fb642a4f93e88274bee64521c0d9e505ce7cf0b09e6eb',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    '9a8c800a9a1a7ea21942e51b1d443dcf566ed51a46191de13c23a4f90bbf3ef7',
  'shared-openhands-basic.json': '84ec401b633b41c6c167cfd25f4b6d753242a45762ff58bf16cd8806ac12a5b4',
  'generated-claude-300-turns.jsonl': 'e5287a20bd974d3c02be48d73f5c5f706d84205d6c83e87767f1e2deb1c32780',
}

describe('agent-ledger import writes the same bytes as before the import-speed work', () => {
  // Sources added after the recording (a new fixture) have no digest from before: not compared.
  const sources = digestSources().filter((source) => RECORDED[source.name] !== undefined)

  it('was recorded with the current mapping version (a new mapping re-records with the script above)', () => {
    expect(IMPORTER_VERSION).toBe(RECORDED_WITH_IMPORTER_VERSION)
  })

  it('imports every recorded synthetic fixture and the generated transcript (the shared recordings when present)', () => {
    const names = sources.map((source) => source.name)
    const expected = Object.keys(RECORDED).filter((name) => !name.startsWith('shared-'))
    for (const name of expected) expect(names, `${name} is gone`).toContain(name)
  })

  it.each(sources.map((source) => [source.name, source] as const))('%s', async (name, source) => {
    expect(await importDigest(source)).toBe(RECORDED[name])
  })
})
