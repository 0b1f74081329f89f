import { describe, expect, it } from 'vitest'

import { timeCommand } from '../bench/support.ts'
import { runFixtureChild } from './fixtures/bench-child.ts'

describe('benchChild', () => {
  it('runs the job in another process, after the module loaded, and reports what it measured', async () => {
    const measure = await runFixtureChild({ double: 21 })
    expect(measure.result.value).toBe(42)
    expect(measure.result.pid).not.toBe(process.pid)
    expect(measure.baselineRssBytes).toBeGreaterThan(0)
    // The job allocated and filled 32 MiB: the peak is above the RSS before it.
    expect(measure.maxRssBytes).toBeGreaterThanOrEqual(measure.baselineRssBytes + 16 * 1024 * 1024)
    expect(measure.seconds).toBeGreaterThan(0)
    expect(measure.cpuSeconds).toBeGreaterThanOrEqual(0)
  })

  it('rejects with the exit code and the job error when the job throws', async () => {
    await expect(runFixtureChild({ fail: 'fixture job failed on purpose' })).rejects.toThrow(
      /exited 1: .*fixture job failed on purpose/s,
    )
  })
})

describe('timeCommand', () => {
  it('returns the median time of the timed runs and the last stdout', () => {
    const timed = timeCommand(process.execPath, ['-e', "process.stdout.write('out')"], {
      rounds: 3,
      warmup: 0,
    })
    expect(timed.stdout.toString()).toBe('out')
    expect(timed.ms).toBeGreaterThan(0)
  })

  it('passes stdin, and names the command and its exit code when a run fails', () => {
    const echoed = timeCommand(process.execPath, ['-e', 'process.stdin.pipe(process.stdout)'], {
      rounds: 1,
      warmup: 0,
      input: Buffer.from('piped'),
    })
    expect(echoed.stdout.toString()).toBe('piped')
    expect(() =>
      timeCommand(process.execPath, ['-e', "process.stderr.write('nope'); process.exit(3)"], { rounds: 1 }),
    ).toThrow(/exited 3: nope/)
  })
})
