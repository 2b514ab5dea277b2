/**
 * The messages of the "not now" errors this process made (`StoreUnavailableError`,
 * `RemoteUnavailableError`), for the HTTP layer, which sees a failed request only as the message the
 * SDK's error mapping kept. An answer becomes 503 with Retry-After when its message is one of these
 * (or one with a hint added after it), not whenever it reads like one: a remote agent's own error text
 * is passed through to the caller and could begin with the same words.
 */

/** How long a message made is recognised (a request fails within this of the error being made). */
const KEEP_MS = 5 * 60_000;
/** Messages kept at most (the reasons of one outage repeat; this bounds a long run of new ones). */
const MAX_KEPT = 256;

const made = new Map<string, number>();

/** Records the message of a "not now" error just made. */
export function noteUnavailable(message: string): void {
  made.delete(message);
  made.set(message, Date.now());
  if (made.size > MAX_KEPT) {
    const oldest = made.keys().next();
    if (!oldest.done) made.delete(oldest.value);
  }
}

/** Whether `message` is (or begins with) the message of a "not now" error this process made lately. */
export function isUnavailableAnswer(message: string): boolean {
  if (!message) return false;
  const now = Date.now();
  for (const [m, at] of made) {
    if (now - at > KEEP_MS) made.delete(m);
    else if (message.startsWith(m)) return true;
  }
  return false;
}
