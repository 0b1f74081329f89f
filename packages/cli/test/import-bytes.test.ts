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
 * work), then on `main` at 55db563 (the Codex, pi and OpenHands mapping changes and the
 * streamed create merged, still without that work; importer version 3), and last on the
 * redaction-transcripts branch (issue 25 item 10: every header records the redaction policy
 * `agent-ledger.default-secrets.2`, and strings the new patterns match are redacted; no mapping change), from the repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-agent-acompact.jsonl':
    '914f1a95a6e3ecce6a0b4546e17527e98b22442ae3ada7511a471714d8542249',
  'synthetic-claude-code-branches.jsonl': '7aba062864120854802145f6732dfce46502c0aec78c1417b36cb2253a171ce8',
  'synthetic-claude-code-broken-chain.jsonl':
    '165de4e5e09dd13afbdbed6ab019fb8ecf508183b7cf558066d82db89b64415f',
  'synthetic-claude-code-compact-lost-parent.jsonl':
    '561d7c4996edddf971363addda116df5324cb8d7e206bf406da40bcc6e0fc125',
  'synthetic-claude-code-compaction.jsonl':
    'b9f4ca5993d559999930307f7c20c59ae5e06c5bb3a21bbd787428e336ab4b41',
  'synthetic-claude-code-flat.jsonl': '081bc1be2cdda3ee7ff3453bae11f88c319103b39a7463014f66650ec361e2f3',
  'synthetic-claude-code-images.jsonl': '695203376d53e47415d00536f89d9989644cebaf580868abcac0749121168e91',
  'synthetic-claude-code-inline-sidechains.jsonl':
    'db73ace0d63eb3cc408ce183d617547a5f61a41b71e3a21ddbd49e80e5cfc87a',
  'synthetic-claude-code-metadata-first.jsonl':
    '6c4f8fcda9564bd599245c7619b4072834376d046cc78193a0f7f2a5b267749e',
  'synthetic-claude-code-nested-forks.jsonl':
    '8a8824b961e8ed9a60fdf01fdb83c94c265621a56b51827bdfea62a86c691242',
  'synthetic-claude-code-parallel-calls.jsonl':
    '3753f00c3f641b173201642e1b3e570212a344fa6f46f4364c3a6ec19a893d9e',
  'synthetic-claude-code-queued-prompt.jsonl':
    '4c227b1a5b832cffd363991090893a8aad5fb1d5301e1fefeef53465b96e9eaa',
  'synthetic-claude-code-resumed.jsonl': 'f06b9197f50fbb7d929d3efaf20cf882c6b629b3a25a7a0adb7cda85a1da2bdc',
  'synthetic-claude-code-slash-command.jsonl':
    '442e314aac2a70e4e884914777aacc77861556af94fbb6b9c0e981a2f3bfabc6',
  'synthetic-claude-code-summary-only.jsonl':
    '8182fe94b4672a7dcbdd5bb7906fa4a3b43744cbb9af1e25d471ff104f41ceb2',
  'synthetic-codex-bare-layout.jsonl': 'b8a6500d2e81deeecf249a0177aa21fef7c2dd958c374f00726d8a918ba7dd8b',
  'synthetic-codex-compacted.jsonl': 'cbe80fe166d48b745f1d98a62aaf0fdcd2a5e93bca3870fc3a8116b7bb6098ab',
  'synthetic-codex-current-shapes.jsonl': '9ca3d379044b073fcdda2577bf0d310429816629889d8e6687b664b7414271de',
  'synthetic-codex-legacy-document.json': '7f7b0d5cb3e3de6fc173b7348aca030506cebdd2d1eea62b950d33b95e488f93',
  'synthetic-codex-rollback.jsonl': 'dbf6b49d5ff52dbe699593a75e9ed450ea12e59d20214e0c54daad2fed611cf4',
  'synthetic-openhands-v0-condensation.jsonl':
    '1781be6c3043784e2ae24a5b1c73eb16422146ba7f4b4c78a0ca301fe7d12041',
  'synthetic-openhands-v1-condensation.jsonl':
    'aa389bf4ae3bdffce768632db2169763b12768a518c9fdd09194cc7ba2c7542f',
  'synthetic-openhands-v1-events.jsonl': '8e89fa5b9453c39f048d3047c691e9eceef33cc11d5080103a6b55b1f367c646',
  'synthetic-openhands-v1-sdk-kinds.jsonl':
    '0487e72494b6df4c9beccc2d0040e3b524808c4c0ac2294454a4fbcae7cddf2d',
  'synthetic-pi-v1-branched.jsonl': '1708d323dc1062fb4f60cadd64cd3dd9d5a82c769ed39c6ed2dad63a3596d8e9',
  'synthetic-pi-v1.jsonl': '3d29b9fbe1dc7916c0aabaafdb81bf9b2cb30165dc12cd319e3273e966ae52ac',
  'synthetic-pi-v2.jsonl': 'd7f65f015c28c998e84a2dd03b9a2bf72ba4507161c36f7df990830014bba1f8',
  'synthetic-pi-v3-session-manager.jsonl': '996486019fd8e5860c1f50777181c2fd6bf22f6193f590165c2aaaeb5655a931',
  'synthetic-pi-v3-tree.jsonl': 'eec786e5b641d8970182efa4dbdc5754b9f74272623d115797d60cf5152deff0',
  'shared-claude-code-short.jsonl': '557df3fed02b62af87cd4f2ee230362c9639759a87812bc8b1a7fc51cdb15096',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    '2bc483c159b652567d76c89f409798e7e500185c6d191f06dbc186cc8553c868',
  'shared-openhands-basic.json': 'e532ee8da6f335aefc29ead0848991a64f71c30d46ebaceef3cf2b6ae5947726',
  'generated-claude-300-turns.jsonl': '04c56caf7ab1c7495d8dc42e3e1635a5176d08f611925a549be68149de75c6ed',
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
