// One PostgreSQL server for the run; the setup is shared with the other packages whose tests
// run against PostgreSQL (the framework adapters).
export { setup, teardown } from '../../../tooling/pg/global-setup.ts'
