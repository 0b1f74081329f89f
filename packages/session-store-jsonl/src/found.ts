/**
 * What a check found, in words for an error message: the value as JSON (cut at 80
 * characters), or that the member is missing (never the bare word "nothing").
 *
 * @param value - The value read, undefined when the member is absent.
 * @param member - The member's name.
 * @returns `"3"`, `{"a":1}`, or `no "version" member`.
 */
export function describeFound(value: unknown, member: string): string {
  if (value === undefined) return `no "${member}" member`
  // JSON.stringify gives undefined only for functions and symbols, which parsed JSON never holds.
  return (JSON.stringify(value) ?? typeof value).slice(0, 80)
}
