import { IMPORTER_VERSION } from '@agent-ledger/import'
import { describe, expect, it } from 'vitest'

import { digestSources, importDigest } from './support/import-digest.ts'

/** The mapping version the digests were recorded with (every header carries it). */
const RECORDED_WITH_IMPORTER_VERSION = 4

/**
 * The log bytes `agent-ledger import` wrote before the import-speed work (validation fast
 * paths, cheaper copies, fewer folds): that work must not change one byte of them.
 *
 * How these were obtained: on `main` at 224c64e (before any of that work), then again on
 * `main` at 1cbeb62 (the Claude Code mapping changes, importer version 3, still without that
 * work), then on `main` at 55db563 (the Codex, pi and OpenHands mapping changes and the
 * streamed create merged, still without that work; importer version 3), and last on the
 * redaction-transcripts branch (issue 25 item 10: every header records the redaction policy
 * `agent-ledger.default-secrets.2`, and strings the new patterns match are redacted; no mapping change),
 * and last on import-fidelity merged with that main (issue 25 items 1-9: importer version 4,
 * pi errored/aborted messages log-only, pi v1 records stored as read, OpenHands V0 `finish` as
 * text, sub-agent ids uncut), from the repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-agent-acompact.jsonl':
    '7a9fa7f7115df1df368bf52bc06ccc54b6e63ef2944e1da8ff01ff9a5d50cfaa',
  'synthetic-claude-code-branches.jsonl': '06e3fc84dc065244714e25336ab4dccae197b804806cd67937585b4b2266abd6',
  'synthetic-claude-code-broken-chain.jsonl':
    '628b6c482272cc1c8c7492bdd78a3836d470f051a093af4b5772d8a138c4aeda',
  'synthetic-claude-code-compact-lost-parent.jsonl':
    '7a5db49f3e664dd5926f18fc1a241358ec2f0ced767c2b434b9511475c1c33e2',
  'synthetic-claude-code-compaction.jsonl':
    '2b1cf7a40a5c6c65e61fba3271f015e25da75a69351e1786c416c3fcf94b195a',
  'synthetic-claude-code-flat.jsonl': '25e2cd7d51e22a56c5ee84ba4480497eba9220df55d71cbadf525065d5f83caf',
  'synthetic-claude-code-images.jsonl': '615583a47523fb8edacd7094cdce081e88ba660cd435eac6c24b05f188ad8793',
  'synthetic-claude-code-inline-sidechains.jsonl':
    '955fe3ef51c7120fc6712d66d4b4113fc194fa7373de3e7d47dea3ae634adaf0',
  'synthetic-claude-code-metadata-first.jsonl':
    '6b118350f92e1cad5f4e214a162746cf984d3b182f5419a9aed845d9fbf4f05e',
  'synthetic-claude-code-nested-forks.jsonl':
    'a274d222762d4112990919b0316261a7f9f7eb4a96fbf88c4412091370683400',
  'synthetic-claude-code-parallel-calls.jsonl':
    '156388332234a5795daa962058922bccc3b4ba063904188374a01cb96f1057fc',
  'synthetic-claude-code-queued-prompt.jsonl':
    '5b194f3dea832d5b453c3204b21b361927da422c8013f6e6e87bdeeb76939e03',
  'synthetic-claude-code-resumed.jsonl': '20d8072b0f33867386acad4e23e4a098683783ebb53f237fcaa7c521af5b344b',
  'synthetic-claude-code-slash-command.jsonl':
    'ea01e4db33579680e3a4c74dd14871c7027a199b4c10f9a06376924bdac28a60',
  'synthetic-claude-code-summary-only.jsonl':
    '8a32d82f45e66b303b480b04631e92a3d2c7e0d92dc397593a868b8ba96f57fb',
  'synthetic-codex-bare-layout.jsonl': '3614c8bc01b6a6167468e5a651975812e48eb044be57820f82ee4254b99f5710',
  'synthetic-codex-compacted.jsonl': 'cc017e4f68697daa7fd27a35429e485650667dd28954b34a3a29dc8469949984',
  'synthetic-codex-current-shapes.jsonl': 'fbc56e0f49faa895753bfa94d95f624adee4e26cb0a09442deff08638c126861',
  'synthetic-codex-legacy-document.json': '6a123adce38cd2579fe8c3c233e01f87293bef8e1e5bd9206d3808670aab512b',
  'synthetic-codex-rollback.jsonl': '3563b7152e39b336e07aa64d63cbcef7bcf99d63ce20f60c43d0c97520feeec2',
  'synthetic-openhands-v0-condensation.jsonl':
    'c5794ab56b37c0354bc873bd446f37079807ca3232e9157489bf68471c98238d',
  'synthetic-openhands-v1-condensation.jsonl':
    '75e30cc6f1067bb63b8f0de7148ce699abbf7cc6f79f83f916582a9dd9e1d30f',
  'synthetic-openhands-v1-events.jsonl': '8fa4ef1ff181d14fac29028f5f03db13386593df9a808bc55c76cdca5dbd35f0',
  'synthetic-openhands-v1-sdk-kinds.jsonl':
    '3bf80490087ff3a007c832eec0480f90079c37aa8689c7aa814cd01136258cbc',
  'synthetic-pi-v1-branched.jsonl': '84e9e5013fe78fb23104bce63ea30bf8f6a39df0fe49f3596129eb4097e282e8',
  'synthetic-pi-v1.jsonl': 'cf7b8959b2fe9fb04d4c63cb5c30574e20269a2484994a681af1687d8c761cac',
  'synthetic-pi-v2.jsonl': '90d8d37f1188f792f78657f2f87be195b7602e15b2f0ce7de427286c2c9f8347',
  'synthetic-pi-v3-errored-calls.jsonl': '0aa6d827a9542303238f5bc645f98fa1f25066ba306f9be734d75b6721a4e618',
  'synthetic-pi-v3-session-manager.jsonl': '2d65a927431439eff64f1d0013870120172494adb9064218d084216df8bd5719',
  'synthetic-pi-v3-spliced.jsonl': 'bc3f31d1d5b60d2af6f5d37cd9f9a16fb214f622681ee2e2fe85cd8b6654dff8',
  'synthetic-pi-v3-tree.jsonl': '9102c15e083e9282af0c61235501e4cd18ac4d60ac7c30eab7bd316502632e51',
  'shared-claude-code-short.jsonl': '69aa687c0294177c05eaac3c91b47bf89171cac5ef1029674715df25f71379da',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    '80bfd9755907ef99c9d40e7a9b4fdcd4970c7991dc90efb65081946d70a6d43f',
  'shared-openhands-basic.json': '09740aea22eab15a042f294059c900c68c8f0d5770328bddd1337e308e65d3a9',
  'generated-claude-300-turns.jsonl': '181713ec7ccb61efb88b30b5d81f374ef9649fa82971ea3d0755fd4a9ca417cf',
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
