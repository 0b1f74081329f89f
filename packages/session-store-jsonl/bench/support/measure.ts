/**
 * Timing helpers of the store benchmarks: wall clock with `performance.now()`, medians, and
 * interleaved (ABAB) runs of a contender beside its floor, so the machine's noise (a shared
 * 2-core box) hits both alike.
 */
import { median } from '../../../../tooling/bench/support.ts'

import type { BenchResult } from '../../../../tooling/bench/types.ts'

export type { BenchResult }

/** Options of a benchmark module's `run`. */
export interface RunOptions {
  readonly scale?: 'default' | 'large'
}

/**
 * Seconds an async action takes.
 *
 * @param action - What to time.
 * @returns Wall seconds.
 */
export async function seconds(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return (performance.now() - started) / 1000
}

/** Samples of an interleaved run, in seconds per run. */
export interface Interleaved {
  readonly ours: number[]
  readonly floor: number[]
}

/**
 * Runs `ours` and `floor` alternately: an untimed warm-up (both at least once, and until
 * `warmupSeconds` have passed, so the JIT has compiled both paths), then `rounds` timed
 * rounds, starting with the floor on even rounds and with ours on odd ones.
 *
 * Each action returns the seconds to count (so setup inside it can be left out of the timing).
 *
 * @param rounds - Timed rounds (each runs both).
 * @param actions - The two contenders, and the minimum warm-up time (default 0: one run each).
 * @returns The timed samples.
 */
export async function interleave(
  rounds: number,
  actions: {
    readonly ours: () => Promise<number>
    readonly floor: () => Promise<number>
    readonly warmupSeconds?: number
  },
): Promise<Interleaved> {
  const warmupEnd = performance.now() + (actions.warmupSeconds ?? 0) * 1000
  do {
    await actions.floor()
    await actions.ours()
  } while (performance.now() < warmupEnd)
  const samples: Interleaved = { ours: [], floor: [] }
  for (let round = 0; round < rounds; round += 1) {
    if (round % 2 === 0) {
      samples.floor.push(await actions.floor())
      samples.ours.push(await actions.ours())
    } else {
      samples.ours.push(await actions.ours())
      samples.floor.push(await actions.floor())
    }
  }
  return samples
}

/**
 * Like {@link interleave} for any number of contenders: one untimed warm-up run each, then
 * `rounds` rounds running every contender once, the order rotated by one each round.
 *
 * @param rounds - Timed rounds.
 * @param actions - The contenders by name; each returns the seconds to count.
 * @returns Samples per contender, in round order.
 */
export async function interleaveAll<TName extends string>(
  rounds: number,
  actions: Readonly<Record<TName, () => Promise<number>>>,
): Promise<Record<TName, number[]>> {
  const names = Object.keys(actions) as TName[]
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<TName, number[]>
  for (const name of names) await actions[name]()
  for (let round = 0; round < rounds; round += 1) {
    for (let step = 0; step < names.length; step += 1) {
      const name = names[(round + step) % names.length]!
      samples[name].push(await actions[name]())
    }
  }
  return samples
}

/**
 * A throughput figure (units per second) beside its floor. `value` and `floor.value` are the
 * medians of each side; `ratio` is the median of the per-round ratios (ours / floor within one
 * ABAB round), which cancels load that drifts between rounds on a shared machine.
 *
 * @param figure - Name, unit, amount of work per run, samples, floor name and target.
 * @returns The figure.
 */
export function throughputFigure(figure: {
  readonly name: string
  readonly unit: string
  readonly work: number
  readonly samples: Interleaved
  readonly floorName: string
  readonly target?: number
}): BenchResult {
  const { ours, floor: floorSamples } = figure.samples
  const value = figure.work / median(ours)
  const floor = figure.work / median(floorSamples)
  // throughput ratio of one round = floor seconds / our seconds
  const ratio = median(ours.map((seconds, round) => floorSamples[round]! / seconds))
  return {
    name: figure.name,
    value,
    unit: figure.unit,
    floor: { name: figure.floorName, value: floor },
    ratio,
    ...(figure.target === undefined ? {} : { target: `>= ${figure.target}`, met: ratio >= figure.target }),
  }
}

/**
 * Prints a progress line to stderr (the table goes to stdout).
 *
 * @param module - The benchmark module's short name.
 * @returns The logger.
 */
export function progress(module: string): (message: string) => void {
  return (message) => {
    process.stderr.write(`bench: ${module}: ${message}\n`)
  }
}
