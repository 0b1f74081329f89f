import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { runDemo } from '../src/demo.ts'
import { fakeChild } from './support/in-process.ts'

let tmp: string

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mini-agent-demo-unit-'))
})

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true })
})

/** Output with the temporary directory and the times masked: what must not differ between runs. */
function normalize(lines: readonly string[]): string {
  return lines
    .join('\n')
    .replace(/\/[^\s"']*mini-agent-demo-[A-Za-z0-9]{6}/g, '<tmp>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>')
    .replace(/-> \d+ bytes/g, '-> <size> bytes')
}

describe('runDemo (in process, with the crashing child simulated)', () => {
  it('tells the whole story and is deterministic apart from times and temporary paths', async () => {
    const first: string[] = []
    const second: string[] = []
    expect(await runDemo({ out: (line) => first.push(line), spawnChild: fakeChild, tmpDir: tmp })).toBe(0)
    expect(await runDemo({ out: (line) => second.push(line), spawnChild: fakeChild, tmpDir: tmp })).toBe(0)
    expect(normalize(second)).toBe(normalize(first))
    const text = first.join('\n')
    expect(text).toContain('placeholder TOOL_OUTCOME_UNKNOWN for write_file')
    expect(text).toContain('[TOOL_OUTCOME_UNKNOWN]')
    expect(text).toContain('reopening the session again repairs nothing more (0 repair events)')
    expect(text).toMatch(/the parent is untouched: (\d+) events before the fork, \1 after\./)
    expect(text).toMatch(/the model now sees \d+ messages instead of \d+/)
    expect(text).toMatch(/compress the session: \d+ bytes -> \d+ bytes \(demo\/session\.v4\.jsonl\.zstd, /)
  })

  it('fails loudly when the child does not die by SIGKILL', async () => {
    const lines: string[] = []
    const code = await runDemo({
      out: (line) => lines.push(line),
      spawnChild: () => Promise.resolve({ code: 0, signal: null, stdout: 'survived\n', stderr: '' }),
      tmpDir: tmp,
    })
    expect(code).toBe(1)
    expect(lines.at(-1)).toContain('DEMO FAILED: the child was expected to die by SIGKILL')
  })
})
