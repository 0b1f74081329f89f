import { IMPORTER_VERSION } from '@agent-ledger/import'
import { describe, expect, it } from 'vitest'

import { digestSources, importDigest } from './support/import-digest.ts'

/** The mapping version the digests were recorded with (every header carries it). */
const RECORDED_WITH_IMPORTER_VERSION = 5

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
 * text, sub-agent ids uncut), and last on the leftovers branch (issue 25 item 4: importer version 5,
 * a record whose line `JSON.stringify` would change is stored as its text; with version 4 kept,
 * only the four sources holding such lines changed: the OpenHands condensation fixtures
 * written with Python's separators, the shared Codex rollout (`19.0`) and the generated
 * transcript's spaced line), from the repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-agent-acompact.jsonl':
    '8aa953ff2f4957d2b12cb63fa51a9d20e2bd45de70da55f18538d6644f90096f',
  'synthetic-claude-code-branches.jsonl': 'fa18f91dad22852ca620cd15270b83ce1f1e355c1cfcbd995a6d00ebdfcc8076',
  'synthetic-claude-code-broken-chain.jsonl':
    '3822aafff9fe3fbe1594f53b26f35c6351645aa3dc1d0b1c533c1d198c357637',
  'synthetic-claude-code-compact-lost-parent.jsonl':
    '0173639311d2f881a7473b7ef9b30da6c13724c6f48c4486279f0686ab762684',
  'synthetic-claude-code-compaction.jsonl':
    '77de9acc69aeecd3fe3423ddfd316332c12b97df28ecce00463591fabcd7897b',
  'synthetic-claude-code-flat.jsonl': '936541fe164c2f2f4bdff83417ffb0b67eb09e2c5779f3a2171355115e169628',
  'synthetic-claude-code-images.jsonl': '53f8f4c94b5390da3aee27b9b7651d2aac8e7a6164c3d15f972811e29d73368c',
  'synthetic-claude-code-inline-sidechains.jsonl':
    '0793f6a741c53562605146a3bb05a541a7c127827ff271bf4c123b3447ba420d',
  'synthetic-claude-code-metadata-first.jsonl':
    '2837dd9e872b60cc41efc3345d2c8bff3f4e304d2b0a0e5968fb3c089f682273',
  'synthetic-claude-code-nested-forks.jsonl':
    'b1113b38d5c28d56d3e8da72d39df7d62976a95c555685e4cdaed5da38838c4f',
  'synthetic-claude-code-parallel-calls.jsonl':
    '0250ed5ea053069014ce19b9d7154acabe5d898bc12358d1f7c95985253d2e63',
  'synthetic-claude-code-queued-prompt.jsonl':
    'd98a8e0197072759b9a591ed8123ce0c509b5e9d82a3abc8794d0026c582f395',
  'synthetic-claude-code-resumed.jsonl': 'd2f3b9cc1fbbaa8307abfa9c95d765ca6ff95df888857f3ab7999ac1921ceb6a',
  'synthetic-claude-code-slash-command.jsonl':
    '9ce30fb7523b814eb2e2d8d77ffa4ab31803c24b570ccab081cbc13d0f971176',
  'synthetic-claude-code-summary-only.jsonl':
    '26372bbe49d8bf0648258485a3fbc8f7ac68cee3ae4124c72874a2a4b3df0135',
  'synthetic-codex-bare-layout.jsonl': '82f88ba8ac230a778acd98c8556545f9af79cb7f2a7ed0ae1b2027cfca6aff08',
  'synthetic-codex-compacted.jsonl': '0509588de49d3c474c7e85788ccf38856d372ee5953d3dc6e200c16e8536a780',
  'synthetic-codex-current-shapes.jsonl': '72fda5bcc2f5d30e5134a1b7c26c074dcdfedacdb98fcfc6bedba5d8ffa40757',
  'synthetic-codex-legacy-document.json': 'e82ce5ab41c52cfefa00967070c3f8459b8c5c2ab0755b9036900250c3be3797',
  'synthetic-codex-rollback.jsonl': '33dda5bec4ca5f8c400ba071ae2b233684fe0b55582b969066549a72f7623ace',
  'synthetic-openhands-v0-condensation.jsonl':
    '3b087649735dd007476078ef5539cb3d0866ffa932d6fe3b0a9c11c709ab8048',
  'synthetic-openhands-v1-condensation.jsonl':
    '7345feb72285d1e27122f05f1168e4fc48c19034da7d97c41e2a27409be3870a',
  'synthetic-openhands-v1-events.jsonl': '8d4e2d8d275c7efd5cea119ecf87b1ca2d63b9bd5a1b250c315b0abd4b3bf20b',
  'synthetic-openhands-v1-sdk-kinds.jsonl':
    '92deba062b9fece7a9808f9b1f48c6a1828f981ce6f817ae215c67fc4b5759e5',
  'synthetic-pi-v1-branched.jsonl': '50aa6d6a6abf9cccae1fa0d62ebeb4649ebe404fbc2998b3081bb80c7145dc73',
  'synthetic-pi-v1.jsonl': 'ed4f443f31b0a398c46944e578f70ece9a3750d8acfcd4db6f6d3d58c071e6f4',
  'synthetic-pi-v2.jsonl': '6551e4ae425d28ab4fc95afe84fa8c712dfea4a72333d641417fa7eca047795e',
  'synthetic-pi-v3-errored-calls.jsonl': 'a89a1e947790db7d9d43c5bc6ef8609753836a021cca8cd6e8d489e18d805c7e',
  'synthetic-pi-v3-session-manager.jsonl': '2c5211dc0357c1fd08ae2e3b6716b6f2c9568f26accf19b4967ec4cf33ff1218',
  'synthetic-pi-v3-spliced.jsonl': 'e9ca4bc1d39bb2de8a0eb699ebcd9d843478e40dd698b25ba2f89e258566794a',
  'synthetic-pi-v3-tree.jsonl': '3537c31d25dd34bf5562d0b2dcc5e54587419246cabd691b48f51af2abf820c2',
  'shared-claude-code-short.jsonl': '4a1c03b7e29830ea9b7667d62498d463761632afe5b0080cf2e9226352d812f3',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    '2830e3040c0276b26f070a5cab4e1ba2540c82355e603c77d5ffa42d811151c4',
  'shared-openhands-basic.json': '113236a901b197f7f24bd1446c6b076ccf90f4324f6edc0464212f0c0609547c',
  'generated-claude-300-turns.jsonl': 'cc1aaacb01fe66fe747ff1bc5718f0de5cb895360fe45cac32630770106a3640',
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
