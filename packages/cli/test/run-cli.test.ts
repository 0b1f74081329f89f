import { describe, expect, it } from 'vitest'

import { runCli } from '../src/index.ts'

function capture(): {
  io: { stdout(text: string): void; stderr(text: string): void }
  out: string[]
  err: string[]
} {
  const out: string[] = []
  const err: string[] = []
  return { io: { stdout: (text) => out.push(text), stderr: (text) => err.push(text) }, out, err }
}

describe('runCli', () => {
  it('prints help and exits 0 for --help', async () => {
    const { io, out } = capture()
    expect(await runCli(['--help'], io)).toBe(0)
    expect(out.join('')).toContain('Usage: agent-ledger')
  })

  it('exits 2 and names the command when it is unknown', async () => {
    const { io, err } = capture()
    expect(await runCli(['frobnicate'], io)).toBe(2)
    expect(err.join('')).toContain('"frobnicate"')
  })
})
