/** Receives warnings (chmod fixes, failed automatic flushes, missing headers...). */
export interface StoreLogger {
  warn(message: string, details?: Record<string, unknown>): void
}
