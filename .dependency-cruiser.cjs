// The import-cycle gate of `pnpm test` (`pnpm cycles`). Layering between packages is
// tooling/check-layers.ts; this only refuses cycles between modules, type-only imports
// included (a cycle through types still ties the modules' designs together).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment:
        'An import cycle: move what both modules need (often a type) into a module of its own that imports neither.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // .readme-examples/ and tooling/.test-output/ hold scratch files the gate's README-example
    // and tooling steps write while this one runs (tooling/gate.ts runs steps side by side).
    exclude: { path: '(^|/)(node_modules|dist|coverage|\\.readme-examples|\\.test-output)/' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
  },
}
