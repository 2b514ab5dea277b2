/**
 * HTTP answers that say "not now" rather than "no": 429, 502, 503 and 504. A gateway answers 503 with
 * `Retry-After` while its task store is unavailable (docs/gateway.md, "When the database is
 * unavailable"), and nginx or another balancer answers 502/503/504 while no instance is up. The body of
 * such an answer may be a JSON-RPC error, which the SDK would hand on as the agent's own error — a
 * refusal. So these answers are caught here, below the SDK: the same request (same body, so the same
 * `messageId`) is sent again after the wait `Retry-After` asks for (bounded), else with backoff, and
 * only when the tries are used up does the caller get a `TransientHttpError`, never a refusal.
 *
 * A message send is tried again only when that cannot make a second task: after 429 or 503 (the server
 * says it did not take the request), or to an agent that honours `messageId` idempotency. A 502 or
 * 504 from a balancer may come after the agent got the request, so to other agents it is not sent
 * again here: the runner treats it as in doubt and looks for the task instead.
 */
import { isRecord } from '../../core/isRecord';
import { sleep } from '../../core/sleep';

/** The statuses that mean "try again later". */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** How long to keep trying one request. */
export interface TransientPolicy {
  /** Tries in all, the first included. */
  readonly maxTries: number;
  /** The wait before the first retry when the answer names none; each further one doubles it. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** The longest wait honoured from `Retry-After`; a longer one is shortened to it. */
  readonly maxRetryAfterMs: number;
  /** The longest time spent waiting for one request, in all. */
  readonly maxTotalMs: number;
}

export const TRANSIENT_POLICY: TransientPolicy = {
  maxTries: 12,
  initialDelayMs: 1_000,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 30_000,
  maxTotalMs: 120_000,
};

/** One transient answer, as the connection reports it (`retryInMs` undefined: no more tries). */
export interface TransientAnswer {
  readonly status: number;
  /** Where it came from (the origin the request went to). */
  readonly origin: string;
  /** What the answer said: its error message, else its status text; at most 300 characters. */
  readonly message: string;
  /** 1 for the first transient answer to this request. */
  readonly attempt: number;
  readonly retryInMs?: number;
}

/** What the connection reports: a transient answer, or the first normal answer after some. */
export type TransientReport =
  { readonly kind: 'unavailable'; readonly answer: TransientAnswer } | { readonly kind: 'available' };

/** A request that kept getting a transient answer until its tries were used up (or that may not be sent again). */
export class TransientHttpError extends Error {
  override readonly name = 'TransientHttpError';
  constructor(
    readonly status: number,
    readonly answer: string,
    /** Tries made. */
    readonly tries: number,
    /** The request was a message send that was not sent again (a 502/504 to an agent without idempotency). */
    readonly notRetried: boolean,
  ) {
    super(
      notRetried
        ? `HTTP ${status} from the gateway in front of the agent (${answer}); the agent may have received the message`
        : `the gateway is temporarily unavailable: HTTP ${status} (${answer}), still after ${tries} tries`,
    );
  }

  /** The server said it did not take the request (429, 503): nothing was delivered. */
  get notTaken(): boolean {
    return this.status === 429 || this.status === 503;
  }
}

/** `Retry-After` in ms (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);

/** Is this request an A2A message send (JSON-RPC method, or the HTTP+JSON route)? */
export function isMessageSend(url: URL, body: unknown): boolean {
  if (/\/message:(send|stream)$/.test(url.pathname)) return true;
  if (typeof body !== 'string') return false;
  try {
    const parsed: unknown = JSON.parse(body);
    return isRecord(parsed) && typeof parsed.method === 'string' && SEND_METHODS.has(parsed.method);
  } catch {
    return false;
  }
}

/** The error message a transient answer carries (JSON-RPC or HTTP+JSON), else its status text. */
async function answerText(res: Response): Promise<string> {
  let text = '';
  try {
    text = await res.text();
  } catch {
    // The body could not be read: the status says enough.
  }
  return transientMessage(text, res.statusText, res.status);
}

/** What a transient answer's body says: its error message (JSON-RPC or HTTP+JSON), else the status text; at most 300 characters. */
export function transientMessage(text: string, statusText: string, status: number): string {
  let message: string | undefined;
  try {
    const body: unknown = JSON.parse(text);
    const error = isRecord(body) && isRecord(body.error) ? body.error : isRecord(body) ? body : undefined;
    if (typeof error?.message === 'string') message = error.message;
  } catch {
    // Not JSON (a balancer's HTML page): its status text stands for it.
  }
  const said = (message ?? statusText) || `HTTP ${status}`;
  return said.length > 300 ? `${said.slice(0, 300)}…` : said;
}

/** What to do after one transient answer: wait `wait` ms and try again, or (`last`) stop here. */
export interface TransientStep {
  readonly wait: number;
  readonly last: boolean;
  /** A message send that is not sent again (a 502/504 to an agent without idempotency). */
  readonly notRetried: boolean;
}

/**
 * The step after the `attempt`-th transient answer to one request, `waited` ms spent waiting so far:
 * the wait `Retry-After` asks for (bounded), else backoff with jitter; the last one when the tries or
 * the time are used up, or when sending it again could make a second task (see the module's comment).
 */
export function transientStep(
  policy: TransientPolicy,
  answer: {
    readonly status: number;
    readonly retryAfter: string | null;
    readonly attempt: number;
    readonly waited: number;
    readonly send: boolean;
    readonly idempotentSend: boolean;
  },
  random: () => number = Math.random,
): TransientStep {
  const { status, attempt } = answer;
  const notRetried = answer.send && !answer.idempotentSend && (status === 502 || status === 504);
  const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  const asked = retryAfterMs(answer.retryAfter);
  const wait = asked !== undefined ? Math.min(asked, policy.maxRetryAfterMs) : backoff / 2 + random() * (backoff / 2);
  const last = notRetried || attempt >= policy.maxTries || answer.waited + wait > policy.maxTotalMs;
  return { wait, last, notRetried };
}

function requestUrl(input: Parameters<typeof fetch>[0]): URL {
  if (typeof input === 'string') return new URL(input);
  if (input instanceof URL) return input;
  return new URL(input.url);
}

export interface TransientFetchOptions {
  readonly policy?: Partial<TransientPolicy>;
  /** The agent honours `messageId` idempotency: a send may be repeated after any transient answer. */
  readonly idempotentSend: boolean | (() => boolean);
  readonly report: (r: TransientReport) => void;
  readonly random?: () => number;
}

/** `base`, trying a request again after a transient answer (see the module's comment). */
export function transientRetryFetch(base: typeof fetch, options: TransientFetchOptions): typeof fetch {
  const policy = { ...TRANSIENT_POLICY, ...options.policy };
  const random = options.random ?? Math.random;
  let unavailable = false;
  return async (input, init) => {
    const url = requestUrl(input);
    const send = isMessageSend(url, init?.body);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const res = await base(input, init);
      if (!TRANSIENT_STATUSES.has(res.status)) {
        if (unavailable) {
          unavailable = false;
          options.report({ kind: 'available' });
        }
        return res;
      }
      const message = await answerText(res);
      const { wait, last, notRetried } = transientStep(
        policy,
        {
          status: res.status,
          retryAfter: res.headers.get('retry-after'),
          attempt,
          waited,
          send,
          idempotentSend:
            typeof options.idempotentSend === 'function' ? options.idempotentSend() : options.idempotentSend,
        },
        random,
      );
      unavailable = true;
      options.report({
        kind: 'unavailable',
        answer: { status: res.status, origin: url.origin, message, attempt, ...(last ? {} : { retryInMs: wait }) },
      });
      if (last) throw new TransientHttpError(res.status, message, attempt, notRetried);
      await sleep(wait, init?.signal ?? undefined);
      // An abort during the wait ends the request as an abort would have.
      init?.signal?.throwIfAborted();
      waited += wait;
    }
  };
}
