/** A JSON object: not null and not an array, both of which `typeof v === 'object'` lets through. */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
