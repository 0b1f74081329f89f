// One flat config for the whole repository. Boundaries live here, per path, and every
// restriction says what to do instead.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const purePackages = [
  'packages/session-events/**',
  'packages/session-projection/**',
  'packages/loop-repair/**',
  'packages/import/src/**',
]

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/*.config.ts',
      '**/*.config.js',
      'bench/**',
      '**/test/fixtures/**',
      // Plain-Node reference readers (outside any TypeScript project), dependency-free on purpose.
      '**/reference/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'typeParameter', format: ['PascalCase'], prefix: ['T'] },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'max-params': ['error', 3],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@agent-ledger/*/src/*', '@agent-ledger/*/dist/*'],
              message: 'Import the package root (@agent-ledger/<name>); deep imports bypass the public API.',
            },
            {
              group: ['**/apps/**'],
              message: 'Libraries never import apps/; move the shared code into a package.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Object'][callee.property.name='assign']",
          message:
            'Object.assign turns a parsed "__proto__" key into a prototype (RELIABILITY S3); use a spread into a fresh object or Object.defineProperty.',
        },
      ],
    },
  },
  {
    files: purePackages,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'fs', 'path', 'os', 'crypto', 'child_process'],
              message:
                'The pure core does no I/O: take what you need as data, or move this code to @agent-ledger/session-store-jsonl.',
            },
            {
              group: ['@agent-ledger/*/src/*', '@agent-ledger/*/dist/*'],
              message: 'Import the package root (@agent-ledger/<name>); deep imports bypass the public API.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'The pure core reads no clock: pass time in as data.' },
        {
          object: 'Math',
          property: 'random',
          message: 'The pure core uses no randomness: pass ids in as data.',
        },
        {
          object: 'performance',
          property: 'now',
          message: 'The pure core reads no clock: pass time in as data.',
        },
        {
          object: 'crypto',
          property: 'randomUUID',
          message: 'The pure core uses no randomness: pass ids in as data.',
        },
      ],
      'no-restricted-globals': [
        'error',
        {
          name: 'process',
          message: 'The pure core does no I/O and reads no environment: take it as an option.',
        },
        { name: 'setTimeout', message: 'The pure core has no timers: the caller schedules.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'new Date() reads the clock: the pure core takes time in as data.',
        },
        {
          selector: "CallExpression[callee.object.name='Object'][callee.property.name='assign']",
          message:
            'Object.assign turns a parsed "__proto__" key into a prototype (RELIABILITY S3); use a spread into a fresh object or Object.defineProperty.',
        },
      ],
    },
  },
  {
    files: ['**/test/**', 'tooling/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'max-params': 'off',
    },
  },
)
