export { default } from '../../tooling/vitest.crash.ts'
