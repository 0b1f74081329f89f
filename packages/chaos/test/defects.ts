// The five counts of a chaos result, shared by the smoke tier and the crash tests.
import type { ChaosResult } from '../src/driver.ts'

/** The five counts; the checker's `toolCallsStarted` is work done, not a defect. */
export const defects = ({ counts }: ChaosResult) => ({
  duplicatedExecutions: counts.duplicatedExecutions,
  forgottenActions: counts.forgottenActions,
  dishonestRepairs: counts.dishonestRepairs,
  ackedEventsLost: counts.ackedEventsLost,
  providerInvalidRequests: counts.providerInvalidRequests,
})
export const none = {
  duplicatedExecutions: 0,
  forgottenActions: 0,
  dishonestRepairs: 0,
  ackedEventsLost: 0,
  providerInvalidRequests: 0,
}
