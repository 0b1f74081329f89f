export { default } from '../../tooling/vitest.shared.ts'
