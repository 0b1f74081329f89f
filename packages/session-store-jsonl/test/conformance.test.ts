import { describe, it } from 'vitest'

import { runBackendConformance } from '@agent-ledger/session-store/conformance'

import { jsonlHarness } from './backend/jsonl-harness.ts'

runBackendConformance({ name: 'jsonl (plain)', describe, it, makeBackend: () => jsonlHarness('plain') })
runBackendConformance({ name: 'jsonl (zstd)', describe, it, makeBackend: () => jsonlHarness('zstd') })
