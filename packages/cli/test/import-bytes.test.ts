import { IMPORTER_VERSION } from '@agent-ledger/import'
import { describe, expect, it } from 'vitest'

import { digestSources, importDigest } from './support/import-digest.ts'

/** The mapping version the digests were recorded with (every header carries it). */
const RECORDED_WITH_IMPORTER_VERSION = 3

/**
 * The log bytes `agent-ledger import` wrote before the import-speed work (validation fast
 * paths, cheaper copies, fewer folds): that work must not change one byte of them.
 *
 * How these were obtained: on `main` at 224c64e (before any of that work), then again on
 * `main` at 1cbeb62 (the Claude Code mapping changes, importer version 3, still without that
 * work), and last on `main` at 55db563 (the Codex, pi and OpenHands mapping changes and the
 * streamed create merged, still without that work; importer version 3), from the repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-agent-acompact.jsonl':
    '1749b955fa6798011f416a2a1ce2fcbf40e6d5711009643569cd20e246de811d',
  'synthetic-claude-code-branches.jsonl': '0e1da57dbd9c9778ea4ab08f911105502ea94804ef9bddce5c16e12aac95c2fc',
  'synthetic-claude-code-broken-chain.jsonl':
    '98fa6e36b2e627ba7255e5b4eef621a0730f1c6c66f5e0383e025a47e3187eba',
  'synthetic-claude-code-compact-lost-parent.jsonl':
    'e935e97e188a337efa602073f62e207d4f8125404e809b56579a5d003db02abe',
  'synthetic-claude-code-compaction.jsonl':
    '06dca3cd1880624e23dc554e18194b87fe9bb993cab2eed9dd6b09815377ef65',
  'synthetic-claude-code-flat.jsonl': 'dacc2f81b19076aae73c41db6666325e1b13333b391d313d73e4c1bedc7c190f',
  'synthetic-claude-code-images.jsonl': '2e81860bcaf8513266ace4f1adc43c078a402e3a90b8f9dd18973a23370161d2',
  'synthetic-claude-code-inline-sidechains.jsonl':
    'a8f5c1af7f50490235bab63fc679dc0aa9abe65dffc5525fa279e0a6ffbda919',
  'synthetic-claude-code-metadata-first.jsonl':
    '6b0bc67c19f2b56df8fec34630760166a22283b28d6fb7c2ed6072d174415a03',
  'synthetic-claude-code-nested-forks.jsonl':
    'c5b7eca7dc4cec78c8080f6005183b6b9616ccfac3b847e77e2d7f576eb05615',
  'synthetic-claude-code-parallel-calls.jsonl':
    'ad016d8773bb3af947e8510d730c7ebe5cbe317aee90a053cd3c6e56c4e1064c',
  'synthetic-claude-code-queued-prompt.jsonl':
    'a664be4d636971ac3eb8b60bd95677b438168834024976886fd04175401a6a44',
  'synthetic-claude-code-resumed.jsonl': '06b4b82710dd9a28102dc51db1b5abf2f18023387c25c35d6b2e6de723f01e5a',
  'synthetic-claude-code-slash-command.jsonl':
    'b426b1b5a301588b804fa3021bc641fd78bbc574e52bc071553f427b3311228b',
  'synthetic-claude-code-summary-only.jsonl':
    '169dd0f9d75becf2fc015687ddcc5e56deee74591539055325d1b87f5afff322',
  'synthetic-codex-bare-layout.jsonl': 'cdf51e294fcb071df5fc5280fffa76259f9e27c15e007c285369737c7fff638a',
  'synthetic-codex-compacted.jsonl': '3beb32fb820889fe88374ca12f3b58b72a1806ca67afa95d93cb23f8f0ff75c6',
  'synthetic-codex-current-shapes.jsonl': '7acf8c32bd68c9be075f43fdfd9475e9dd424ee213c626b1d08a6ff996bd0114',
  'synthetic-codex-legacy-document.json': '4b81c2cf57a6bb8bb330243795c2ed489b0f2b25af7d7b9ddce244a001b42a6d',
  'synthetic-codex-rollback.jsonl': 'aed8a932a1e5449743865b3a37a5996a044a6e7920ea6e4e0c96b83bffde7829',
  'synthetic-openhands-v0-condensation.jsonl':
    'd754261f8c0f8b9e094fa9f1d3798a4bf54fc1e92a43a1ff4ec3d67574a6b10a',
  'synthetic-openhands-v1-condensation.jsonl':
    '8409be4d8a30c593afa241e4cc2bf87c4311b0376325e22a8e8bd92ca46d3e53',
  'synthetic-openhands-v1-events.jsonl': 'cbcc5d5c05b698ef110d89301035ad6beb024aa67d038f7660c79705275c0398',
  'synthetic-openhands-v1-sdk-kinds.jsonl':
    '5197bcf88dc11b18bedc9e6f3fbc97e1b1a1979ed3cf849ae8e9354ac2cc5850',
  'synthetic-pi-v1-branched.jsonl': 'fae9666732370a3a2c7875ea40e02402ff0ffa1a0f2ff0312a16821ea7a7fd75',
  'synthetic-pi-v1.jsonl': 'c721d7ba6487c9ecc351048557e9991d3a9379e4d11ea43dfeff9e9b5ffa5726',
  'synthetic-pi-v2.jsonl': 'c50bc340e89b836c3f07ce496ac19b1d25d7ec36ba58ab8f79ec72286ddc305c',
  'synthetic-pi-v3-session-manager.jsonl': '18df8c8f8b1f85f4465b39bed55e23e7ca0012fe72a887a028db6bd03c316249',
  'synthetic-pi-v3-tree.jsonl': '38da5e1e833f0f2fd014b039f4577115696d1116c7af53a0a1a5f8bd3d863fdb',
  'shared-claude-code-short.jsonl': 'e37493157ee4428f3ea2f2f1e3bccbde51616aff5223db35a0810e33082c5806',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    '61925fa4c188b02a21708c46e2082856a868ed51b50c050f4652994d03973574',
  'shared-openhands-basic.json': '167ee95f0f97da6bf64716e2a539ded96b2a4d09624d899855baecddf2379050',
  'generated-claude-300-turns.jsonl': 'f143559671a983022a521f92fdbf6fe2b0a063d1f307220cc024a550890ebe49',
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
