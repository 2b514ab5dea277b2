/** The message of anything thrown, for logs and for messages to the user. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
