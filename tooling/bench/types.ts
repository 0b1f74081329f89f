/** One measured figure, printed beside its floor (measured in the same run) as a ratio. */
export interface BenchResult {
  /** What was measured, e.g. `open 200 MB plain log`. */
  name: string
  /** Our figure, in `unit`. */
  value: number
  unit: string
  /** The floor measured in the same run on the same data (bare JSON.parse loop, bare write+fsync, zstd CLI). */
  floor?: { name: string; value: number }
  /** value / floor.value (or the inverse, as the module documents); the claim is this ratio. */
  ratio?: number
  /** The target the ratio is held to, in words (e.g. `>= 0.6`). */
  target?: string
  /** Whether the ratio met the target in this run. */
  met?: boolean
}

/** A benchmark module: `bench/*.bench.ts` in a package, exporting `run`. */
export interface BenchModule {
  run(options: { scale: 'default' | 'large' }): Promise<BenchResult[]>
}
