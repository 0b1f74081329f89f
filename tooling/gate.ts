/**
 * The gate (`pnpm test`, which is `pnpm run check`) and the crash run (`pnpm test:crash`):
 * runs each step as a child process, streaming its output as it comes, times it, and goes on
 * after a failing step (no step needs an earlier one to have passed: see {@link GATE_STEPS}).
 * Steps start in list order; with more than one slot (the gate has two, one per core of the
 * CI machine) a step starts beside the running ones once enough slots are free and the steps
 * it names in `after` have ended, and each line it prints is prefixed with `[its name]`.
 * Before the first step it deletes every test report a step declares, so a report left by an
 * earlier run never counts. At the end it prints the per-report counts, a table of the steps
 * (wall time, ok/FAILED, tests), the run's wall time and the CPU time its steps used (Linux),
 * the slowest five steps and turbo tasks, the tail of each failing step's output that no
 * failing test explains, the failing tests (file and name, read from the vitest JSON
 * reports), and last, alone, the closing line: `N passed, N failed` (`, N skipped` when any).
 *
 * Exits 1 when a step failed, when a step that runs tests left no report or ran no test,
 * or when no test ran at all.
 *
 * Usage: `tsx tooling/gate.ts` (the gate), `tsx tooling/gate.ts --crash` (the crash run).
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

/** One step of a run. */
export interface GateStep {
  /** Its name in the table. */
  readonly name: string
  /** The program and its arguments, started in the root without a shell. */
  readonly command: readonly string[]
  /**
   * The vitest JSON reports the step writes: root-relative paths in which a `*` segment
   * stands for any one directory entry. They are deleted before the run; a step declaring
   * reports that leaves none, or only empty ones, "ran no test" and fails the run.
   */
  readonly reports?: readonly string[]
  /** Times of the step's own tasks (turbo's per-task times), read once it ends. */
  readonly tasks?: (root: string, startedAt: number) => readonly TaskTime[]
  /**
   * How many of the run's slots the step takes while it runs (default 1; at most the run's).
   * A step that runs things in parallel itself (turbo) takes them all.
   */
  readonly slots?: number
  /**
   * Names of earlier steps that must have ended (passed or not) before this one starts: the
   * ones that read or write what this one writes.
   */
  readonly after?: readonly string[]
}

/** A named duration, in milliseconds. */
export interface TaskTime {
  readonly name: string
  readonly ms: number
}

/** Where a run prints, and what it starts its steps with. */
export interface GateOptions {
  readonly root: string
  readonly steps: readonly GateStep[]
  readonly stdout?: NodeJS.WritableStream
  readonly stderr?: NodeJS.WritableStream
  readonly env?: NodeJS.ProcessEnv
  /**
   * How many slots the run has (default 1: one step at a time, its output unprefixed). With
   * more, steps run side by side (see {@link GateStep.slots} and {@link GateStep.after}).
   */
  readonly slots?: number
}

/** Lines of a failing step's output kept for the closing report. */
const TAIL_LINES = 30

/** The first line of a failure message, shortened. */
function firstLine(text: string): string {
  const line = text.split('\n').find((candidate) => candidate.trim() !== '') ?? ''
  return line.length > 200 ? `${line.slice(0, 197)}...` : line
}

function duration(ms: number): string {
  const seconds = ms / 1000
  if (seconds < 60) return `${seconds.toFixed(1)} s`
  const minutes = Math.floor(seconds / 60)
  return `${minutes} min ${String(Math.round(seconds - minutes * 60)).padStart(2, '0')} s`
}

/** The existing files a report pattern names (`*` is one directory entry). */
function expandReports(root: string, pattern: string): string[] {
  let paths = ['']
  for (const segment of pattern.split('/')) {
    const next: string[] = []
    for (const path of paths) {
      if (segment !== '*') {
        next.push(path === '' ? segment : `${path}/${segment}`)
        continue
      }
      const directory = join(root, path)
      if (!existsSync(directory) || !statSync(directory).isDirectory()) continue
      for (const entry of readdirSync(directory).sort()) next.push(path === '' ? entry : `${path}/${entry}`)
    }
    paths = next
  }
  return paths.filter((path) => existsSync(join(root, path)) && statSync(join(root, path)).isFile())
}

interface VitestAssertion {
  readonly ancestorTitles?: readonly string[]
  readonly title: string
  readonly status: string
  readonly failureMessages?: readonly string[]
}

interface VitestFile {
  readonly name: string
  readonly status: string
  readonly message?: string
  readonly assertionResults?: readonly VitestAssertion[]
}

interface VitestJsonReport {
  readonly numPassedTests: number
  readonly numFailedTests: number
  readonly numPendingTests?: number
  readonly numTodoTests?: number
  readonly testResults?: readonly VitestFile[]
}

/** What one report says. */
interface ReportCounts {
  readonly file: string
  readonly passed: number
  readonly failed: number
  readonly skipped: number
  /** `file > describe > test`, then the first line of its failure. */
  readonly failures: readonly string[]
}

/**
 * Reads one vitest JSON report. A test file that failed with no failing test in it (it did
 * not load, or a hook threw) counts as one failed test; an unreadable report counts as one
 * failure naming the report.
 */
function readReport(root: string, file: string): ReportCounts {
  let report: VitestJsonReport
  try {
    report = JSON.parse(readFileSync(join(root, file), 'utf8')) as VitestJsonReport
    if (typeof report.numPassedTests !== 'number' || typeof report.numFailedTests !== 'number') {
      throw new Error('numPassedTests and numFailedTests are not numbers')
    }
  } catch (error) {
    return {
      file,
      passed: 0,
      failed: 1,
      skipped: 0,
      failures: [`${file}: not a vitest JSON report (${firstLine(String(error))})`],
    }
  }
  const failures: string[] = []
  let failedFiles = 0
  for (const testFile of report.testResults ?? []) {
    const name = relative(root, testFile.name)
    const failed = (testFile.assertionResults ?? []).filter((test) => test.status === 'failed')
    for (const test of failed) {
      failures.push(`${[name, ...(test.ancestorTitles ?? []), test.title].join(' > ')}`)
      const message = firstLine(test.failureMessages?.[0] ?? '')
      if (message !== '') failures.push(`  ${message}`)
    }
    if (testFile.status === 'failed' && failed.length === 0) {
      failedFiles += 1
      failures.push(`${name} (the file failed before its tests: ${firstLine(testFile.message ?? '')})`)
    }
  }
  return {
    file,
    passed: report.numPassedTests,
    failed: report.numFailedTests + failedFiles,
    skipped: (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0),
    failures,
  }
}

/** How a step ended. */
interface StepResult {
  readonly step: GateStep
  readonly ms: number
  /** The exit code, or the signal or spawn error that ended it. */
  readonly exit: string
  readonly ok: boolean
  readonly reports: readonly ReportCounts[]
  /** The step declares reports and they hold no test. */
  readonly noTests: boolean
  readonly tail: readonly string[]
  readonly tasks: readonly TaskTime[]
}

/**
 * Writes a step's output through, whole lines only and each behind `prefix` when there is one
 * (steps running side by side), so lines of two steps never mix.
 */
function lineWriter(
  target: NodeJS.WritableStream,
  prefix: string,
): { write(chunk: Buffer): void; end(): void } {
  if (prefix === '') return { write: (chunk) => void target.write(chunk), end: () => undefined }
  let partial = ''
  return {
    write(chunk) {
      const lines = (partial + chunk.toString('utf8')).split('\n')
      partial = lines.pop() ?? ''
      if (lines.length > 0) target.write(lines.map((line) => `${prefix}${line}\n`).join(''))
    },
    end() {
      if (partial !== '') target.write(`${prefix}${partial}\n`)
      partial = ''
    },
  }
}

/** Runs one step, streaming its output and keeping its last {@link TAIL_LINES} lines. */
function runStep(
  options: GateOptions,
  step: GateStep,
  prefix: string,
): Promise<{ exit: string; ok: boolean; tail: string[] }> {
  const stdout = lineWriter(options.stdout ?? process.stdout, prefix)
  const stderr = lineWriter(options.stderr ?? process.stderr, prefix)
  let tail: string[] = []
  let partial = ''
  const keep = (chunk: Buffer): void => {
    const lines = (partial + chunk.toString('utf8')).split('\n')
    partial = lines.pop() ?? ''
    tail = [...tail, ...lines].slice(-TAIL_LINES)
  }
  return new Promise((resolve) => {
    const [program, ...args] = step.command
    const child = spawn(program!, args, {
      cwd: options.root,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.write(chunk)
      keep(chunk)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.write(chunk)
      keep(chunk)
    })
    let spawnError: Error | undefined
    child.on('error', (error) => {
      spawnError = error
    })
    child.on('close', (code, signal) => {
      stdout.end()
      stderr.end()
      const lines = partial === '' ? tail : [...tail, partial].slice(-TAIL_LINES)
      if (spawnError !== undefined) {
        resolve({ exit: `could not start: ${spawnError.message}`, ok: false, tail: lines })
      } else if (signal !== null) {
        resolve({ exit: `killed by ${signal}`, ok: false, tail: lines })
      } else {
        resolve({ exit: `exit ${code}`, ok: code === 0, tail: lines })
      }
    })
  })
}

/** The closing report, the closing line last. */
function report(
  results: readonly StepResult[],
  wallMs: number,
  cpuMs: number | undefined,
): { lines: string[]; failed: boolean } {
  const lines: string[] = ['', '== gate: test reports']
  let passed = 0
  let failed = 0
  let skipped = 0
  for (const result of results) {
    for (const counts of result.reports) {
      passed += counts.passed
      failed += counts.failed
      skipped += counts.skipped
      lines.push(`  ${counts.file}: ${counts.passed} passed, ${counts.failed} failed`)
    }
  }
  const width = Math.max(4, ...results.map((result) => result.step.name.length))
  lines.push('', '== gate: steps', `  ${'step'.padEnd(width)}  ${'time'.padStart(12)}  result  tests`)
  for (const result of results) {
    const verdict = !result.ok ? 'FAILED' : result.noTests ? 'NO TEST' : 'ok'
    let tests = ''
    if (result.step.reports !== undefined) {
      const sum = (key: 'passed' | 'failed'): number =>
        result.reports.reduce((total, counts) => total + counts[key], 0)
      tests = result.noTests ? 'ran no test' : `${sum('passed')} passed, ${sum('failed')} failed`
    }
    lines.push(
      `  ${result.step.name.padEnd(width)}  ${duration(result.ms).padStart(12)}  ${verdict.padEnd(6)}  ${tests}`.trimEnd(),
    )
  }
  lines.push(
    `  wall time: ${duration(wallMs)} (the steps' own times add up to ${duration(results.reduce((total, result) => total + result.ms, 0))}${cpuMs === undefined ? '' : `; CPU time of the steps: ${duration(cpuMs)}`})`,
  )
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 5)
  lines.push(
    `  slowest steps: ${slowest.map((result) => `${result.step.name} ${duration(result.ms)}`).join(', ')}`,
  )
  for (const result of results) {
    if (result.tasks.length === 0) continue
    const tasks = [...result.tasks].sort((a, b) => b.ms - a.ms).slice(0, 5)
    lines.push(
      `  slowest tasks of ${result.step.name}: ${tasks.map((task) => `${task.name} ${duration(task.ms)}`).join(', ')}`,
    )
  }
  // A failing step whose reports name no failing test: its output says why.
  for (const result of results) {
    const explained = result.reports.some((counts) => counts.failures.length > 0)
    if (result.ok && !result.noTests) continue
    if (explained) continue
    const why = result.ok ? 'ran no test' : result.exit
    lines.push('', `== gate: ${result.step.name} failed (${why}); the end of its output:`)
    lines.push(...result.tail.map((line) => `  | ${line}`))
  }
  const failures = results.flatMap((result) => result.reports.flatMap((counts) => counts.failures))
  if (failures.length > 0) lines.push('', '== gate: failing tests', ...failures.map((line) => `  ${line}`))
  const closing = `${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`
  const stepFailed = results.some((result) => !result.ok || result.noTests)
  return { lines: [...lines, closing], failed: stepFailed || failed > 0 || passed + failed === 0 }
}

/**
 * CPU time (user + system, ms) of this process's ended and waited-for children, from
 * `/proc/self/stat` (Linux; undefined elsewhere). Unlike wall time it hardly changes with the
 * machine's load, so two runs on a busy machine can be compared by it.
 */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    // Fields after the command name (which may hold spaces), from field 3 on: cutime and cstime
    // are fields 16 and 17, in clock ticks (USER_HZ, 100 on Linux).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[13]) + Number(fields[14])) * 10
  } catch {
    return undefined
  }
}

/** Checks the step list: unique names, `after` naming earlier steps only. */
function validate(steps: readonly GateStep[]): void {
  const seen = new Set<string>()
  for (const step of steps) {
    for (const name of step.after ?? []) {
      if (!seen.has(name)) {
        throw new Error(`gate step "${step.name}" runs after "${name}", which is not an earlier step`)
      }
    }
    if (seen.has(step.name)) throw new Error(`two gate steps are named "${step.name}"`)
    seen.add(step.name)
  }
}

/**
 * Runs the steps (each one whatever the earlier ones did), then prints the closing report.
 * Steps start in list order, each once the steps it runs `after` have ended and its slots are
 * free (with one slot: one after the other). Resolves to the exit code: 1 when a step failed,
 * a test step ran no test, a test failed, or no test ran at all; else 0.
 */
export async function runGate(options: GateOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const slots = Math.max(1, options.slots ?? 1)
  validate(options.steps)
  for (const step of options.steps) {
    for (const pattern of step.reports ?? []) {
      for (const file of expandReports(options.root, pattern)) rmSync(join(options.root, file))
    }
  }
  const runStart = performance.now()
  const cpuStart = childrenCpuMs()
  const results: StepResult[] = new Array<StepResult>(options.steps.length)
  const ended = new Set<string>()
  const running = new Map<number, Promise<number>>()
  let free = slots
  const start = (index: number): Promise<number> => {
    const step = options.steps[index]!
    const prefix = slots > 1 ? `[${step.name}] ` : ''
    stdout.write(`\n== gate: ${step.name}: ${step.command.join(' ')}\n`)
    const startedAt = Date.now()
    const begin = performance.now()
    return runStep(options, step, prefix).then(({ exit, ok, tail }) => {
      const ms = performance.now() - begin
      const reports = (step.reports ?? []).flatMap((pattern) =>
        expandReports(options.root, pattern).map((file) => readReport(options.root, file)),
      )
      const noTests =
        step.reports !== undefined && reports.every((counts) => counts.passed + counts.failed === 0)
      let tasks: readonly TaskTime[] = []
      try {
        tasks = step.tasks?.(options.root, startedAt) ?? []
      } catch {
        // Task times are a courtesy; a step's verdict never depends on them.
      }
      results[index] = { step, ms, exit, ok, reports, noTests, tail, tasks }
      if (slots > 1)
        stdout.write(`== gate: ${step.name}: ${ok ? 'ended' : `FAILED (${exit})`} after ${duration(ms)}\n`)
      return index
    })
  }
  for (let index = 0; index < options.steps.length; index += 1) {
    const step = options.steps[index]!
    const need = Math.min(slots, Math.max(1, step.slots ?? 1))
    const ready = (): boolean => free >= need && (step.after ?? []).every((name) => ended.has(name))
    while (!ready()) {
      const done = await Promise.race(running.values())
      running.delete(done)
      ended.add(options.steps[done]!.name)
      free += Math.min(slots, Math.max(1, options.steps[done]!.slots ?? 1))
    }
    free -= need
    running.set(index, start(index))
  }
  await Promise.all(running.values())
  const cpuEnd = childrenCpuMs()
  const cpuMs = cpuStart === undefined || cpuEnd === undefined ? undefined : cpuEnd - cpuStart
  const { lines, failed } = report(results, performance.now() - runStart, cpuMs)
  stdout.write(`${lines.join('\n')}\n`)
  return failed ? 1 : 0
}

interface TurboRunSummary {
  readonly tasks: readonly {
    readonly taskId: string
    readonly execution?: { readonly startTime: number; readonly endTime: number }
    readonly cache?: { readonly status: string }
  }[]
}

/** Per-task wall times from the newest turbo run summary (`--summarize`) written since `startedAt`. */
function turboTaskTimes(root: string, startedAt: number): TaskTime[] {
  const directory = join(root, '.turbo', 'runs')
  if (!existsSync(directory)) return []
  const newest = readdirSync(directory)
    .filter((name) => name.endsWith('.json'))
    .map((name) => ({ file: join(directory, name), mtime: statSync(join(directory, name)).mtimeMs }))
    .filter((entry) => entry.mtime >= startedAt)
    .sort((a, b) => b.mtime - a.mtime)[0]
  if (newest === undefined) return []
  const summary = JSON.parse(readFileSync(newest.file, 'utf8')) as TurboRunSummary
  return summary.tasks.flatMap((task) =>
    task.execution === undefined
      ? []
      : [
          {
            name: `${task.taskId}${task.cache?.status === 'HIT' ? ' (cached)' : ''}`,
            ms: task.execution.endTime - task.execution.startTime,
          },
        ],
  )
}

const PACKAGE_REPORTS = (name: string): string[] => [`packages/*/${name}`, `apps/*/${name}`]

/**
 * The gate's steps, in order. None needs an earlier one to have passed: the checks read the
 * sources; the outside-consumer test packs the packages, and their `prepack`
 * (tooling/prepack.ts) builds any `dist/` the turbo step left missing or stale; the
 * frameworks:next suites run from the sources on their own Node. So after a failing step the
 * run goes on and the closing report covers everything.
 *
 * They run two at a time ({@link GATE_SLOTS}), the longest first. The checks before turbo
 * share no files: the README examples write `.readme-examples/<run>/` beside each README and
 * the tooling tests scratch files in `tooling/.test-output/` (and README examples of their own
 * in a `.readme-examples/<run>/` of their own), all gitignored, which prettier, knip and links
 * skip, the layer check never reads (only `src/`) and the dependency cruiser excludes. The
 * outside-consumer test runs `after` turbo: it packs the packages, whose `prepack` would build
 * a `dist/` beside a turbo build writing it.
 */
const GATE_STEPS: readonly GateStep[] = [
  { name: 'readme-examples', command: ['tsx', 'tooling/readme-examples.ts'] },
  { name: 'prettier', command: ['prettier', '--check', '.', '--cache', '--cache-strategy', 'content'] },
  { name: 'test:tooling', command: ['pnpm', 'test:tooling'], reports: ['tooling-test-results.json'] },
  { name: 'layers', command: ['tsx', 'tooling/check-layers.ts'] },
  { name: 'cycles', command: ['pnpm', 'run', 'cycles'] },
  { name: 'knip', command: ['pnpm', 'run', 'knip'] },
  { name: 'links', command: ['tsx', 'tooling/check-links.ts'] },
  {
    name: 'turbo',
    // --continue=dependencies-successful: a failing task stops only what needs it, so every
    // failing test is in the closing report, not only the first task's.
    command: [
      'turbo',
      'run',
      'lint',
      'typecheck',
      'test',
      'test:e2e',
      'check:package',
      '--concurrency=2',
      '--continue=dependencies-successful',
      '--summarize',
    ],
    reports: [...PACKAGE_REPORTS('test-results.json'), ...PACKAGE_REPORTS('e2e-results.json')],
    tasks: turboTaskTimes,
    // It runs two tasks at once itself.
    slots: 2,
  },
  { name: 'outside-consumer', command: ['tsx', 'tooling/outside-consumer.ts'], after: ['turbo'] },
  {
    name: 'frameworks-next',
    command: ['tsx', 'tooling/frameworks-next.ts'],
    reports: ['packages/*/test-output/next-results.json'],
  },
]

/** Steps of the gate that run at once: one per core of the 2-core CI machine. */
const GATE_SLOTS = 2

/** The crash run's one step (`pnpm test:crash`). */
const CRASH_STEPS: readonly GateStep[] = [
  {
    name: 'turbo test:crash',
    command: ['turbo', 'run', 'test:crash', '--continue=dependencies-successful'],
    reports: PACKAGE_REPORTS('crash-results.json'),
  },
]

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
  const crash = process.argv.includes('--crash')
  process.exitCode = await runGate({
    root,
    steps: crash ? CRASH_STEPS : GATE_STEPS,
    slots: crash ? 1 : GATE_SLOTS,
  })
}
