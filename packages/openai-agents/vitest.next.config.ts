// The suite against the framework's next major version under Node 22: run through
// tooling/frameworks-next.ts (`pnpm frameworks:next`), which installs both from the registry.
import { frameworkNextConfig } from '../../tooling/next/vitest-next.ts'

export default frameworkNextConfig()
