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
 * work), and last on `main` at 55db563 (the Codex, pi and OpenHands mapping changes and the
 * streamed create merged, still without that work; importer version 3), and last for importer
 * version 4 on the branch import-fidelity (issue 25: pi errored/aborted messages log-only, pi
 * v1 records stored as read, OpenHands V0 `finish` as text, sub-agent ids uncut), from the repository root, `pnpm exec tsx --conditions=@agent-ledger/source
 * packages/cli/test/support/import-digest.ts` (the same sources and the same digest as
 * below; run twice, same output). A change to the mapping that is meant to change the
 * output (it bumps `IMPORTER_VERSION`, which every header carries) re-records them with
 * that command, and says so in its commit; a fixture added later has no digest and is not
 * compared.
 */
const RECORDED: Readonly<Record<string, string>> = {
  'synthetic-claude-code-agent-acompact.jsonl':
    '6192938063fd4207153ffc0f10052c0647e3dda9cd3414a890657f2565d967fc',
  'synthetic-claude-code-branches.jsonl': 'baea250d90b2fd945c3f7eec7bb248ab949e2a93f52967f1111d37bf138fcd53',
  'synthetic-claude-code-broken-chain.jsonl':
    '855e64a023e6576bce9874516daa375ed1b6c3c0c514590d8746360a4d894eb9',
  'synthetic-claude-code-compact-lost-parent.jsonl':
    '156012c0d2c734f1013b0f17951070abda9b0a9b80364fe39d7179c3257f10a3',
  'synthetic-claude-code-compaction.jsonl':
    '5da26216e9c444658c6a8b3cd9b32ad71df645e10c1bc4b10a2391fcaa608527',
  'synthetic-claude-code-flat.jsonl': '835bc833995d24c2476d8102ace8be86e29069b0e7738e52b873fad7c3129f70',
  'synthetic-claude-code-images.jsonl': '610514c8c633e3782816c42f7ed8e68b0199cdb08b330c92b472c4eaa2ac7532',
  'synthetic-claude-code-inline-sidechains.jsonl':
    '880259bd452b166caea6131b502936daf8f1a7a10d183e5a769af406a3083a23',
  'synthetic-claude-code-metadata-first.jsonl':
    '76f1093ff3233bb5f6575f3dc42363fc13f5a8b006d64cfbf3f1799a1d562d14',
  'synthetic-claude-code-nested-forks.jsonl':
    '5ceb33b3d27a67b7842e5325194bdfca9089135bfc18e7bc744d75e01b0e823a',
  'synthetic-claude-code-parallel-calls.jsonl':
    '39e2ea67d70514d6ad4c47de1fc408d572fd0349c68c1bf89bdc37bb98850f84',
  'synthetic-claude-code-queued-prompt.jsonl':
    'e611d75b3f72f89bc161560dadb4eddba5abe8b57804e7993fe073073a705acd',
  'synthetic-claude-code-resumed.jsonl': '6e8474e49d1129b12fbef2a8f7f13d7789ed5a904be106cbdab13ac8c4a4f56a',
  'synthetic-claude-code-slash-command.jsonl':
    'c2836788c6b0ebdee3cca7f900b1c8ccb7e2bab5c9295b26e78898c0d55ae6ee',
  'synthetic-claude-code-summary-only.jsonl':
    '21e0ef401c34118980a0011d936456f83ce6132b12c62fea719691b70ef5dbdc',
  'synthetic-codex-bare-layout.jsonl': '833364aca2f655e75128b250b622310ee71d67605b418e5a72b0d95763476ad1',
  'synthetic-codex-compacted.jsonl': '6a797c43bb9d42840f03572d1db948e0236823f8854348c0949015d1ec8469a9',
  'synthetic-codex-current-shapes.jsonl': '43a067c055ec20ef731d4dba2883ef6c4476034a541de77a2518ef78fd17dbf6',
  'synthetic-codex-legacy-document.json': '7a89c789d602790e509f6d7f1ba3236de9a5973301ac31a90f27f551b1bdb8ed',
  'synthetic-codex-rollback.jsonl': '56c4839fff76470bad74d1e7d166627901b0f5b5102a051f25306d5b60cd1984',
  'synthetic-openhands-v0-condensation.jsonl':
    'dff98b3334badea504f80d5ab4c441418965758fb5ac9ea39313eb91d9cd9635',
  'synthetic-openhands-v1-condensation.jsonl':
    '53c799f8a53f672d798127326097962395ecd56418b7dc982f728461b10e9b86',
  'synthetic-openhands-v1-events.jsonl': 'f91df4383170d408a27d72b389f0152690c80745a12937c8667952a52288c2ed',
  'synthetic-openhands-v1-sdk-kinds.jsonl':
    'd71d2bb21ebe665f1912791a45b7c16c746f8dbf0673a52b569ad2d04ba46f81',
  'synthetic-pi-v1-branched.jsonl': '57909a6c70ec1d59e2ca30b0b25279396739c1bd79efbc9212e68cf7a4e636f3',
  'synthetic-pi-v1.jsonl': '97f541c1ef6c0b69b4d20aeb8c63808b2244d2822bbf611a83d1abdd6e6c7dfe',
  'synthetic-pi-v2.jsonl': '367bda7e0efa4ed075ad9b90410495c83ea75b860270a65bda3c37164d6e181a',
  'synthetic-pi-v3-errored-calls.jsonl': 'efce677a310d9238d1ed5ab6507a42f90e53608290cbd0d734df92a2f44fd309',
  'synthetic-pi-v3-session-manager.jsonl': 'cbfebc8267eced85877dbba492010b874e9143e2a68885969eb0d78e5a054721',
  'synthetic-pi-v3-spliced.jsonl': '0212a2b78beb45475eb90e63dbf0cf11eec897337b6b27b1e60b5d1375d3a162',
  'synthetic-pi-v3-tree.jsonl': '7a324f617aac65101a8085c5186fcc4413b921da4c55011239d9e467027e7f7f',
  'shared-claude-code-short.jsonl': '872e31a8e65fe2f3ec2defaa586059761b9f71ed02aecefb6f05a910becd30cc',
  'shared-codex-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl':
    'fef476796822adf08a0c090e0b3c38da71b0825de90ba9f599ec528df4521ac4',
  'shared-openhands-basic.json': '13c7e746347860a62297d882a716c69687a4992914c0c7c0f94f102d82df843d',
  'generated-claude-300-turns.jsonl': '48cc0ad4c13961a4d50d91a44baad837ce211522b8301268c3b6136ba9f74d86',
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
