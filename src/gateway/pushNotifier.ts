/**
 * A2A push notifications with an SSRF-safe sender. docs/security.md "The gateway": webhook URLs go through the
 * same rules as card fetches — the SDK's DefaultPushNotificationSender fetches any URL and follows
 * redirects, so it is not used. Every POST goes through `safeFetch` (https only unless the host is in
 * `pushAllowPrivateHosts`, public unicast addresses checked where they are dialled, no redirects, a
 * deadline and a response cap), and the URL is checked twice: when the config is created (so the
 * caller hears why at once) and again at every delivery (a name may rebind after creation).
 *
 * Deliveries run off the request path: the event hub tells the notifier about each committed batch,
 * and a state change fans out to one lane per (task, config). A lane sends the task as it is in the
 * store when it sends (coalescing states a slow receiver missed: GetTask is the truth, A2A §3.7), retries
 * a bounded number of times with backoff, and logs failures without tokens or the URL's path (some
 * webhook URLs are secrets themselves).
 */
import { createHash, randomUUID } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { TaskState } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { sleep } from '../core/sleep';
import { checkAddress, hostMatches, safeFetch, SafeFetchError } from '../node/safeFetch';
import type { Resolver, SafeFetchOptions } from '../node/safeFetch';
import { EventHub } from './eventLog';
import type { AppendNotice } from './eventLog';
import type { GatewayStore, PushConfigRow } from './store/gatewayStore';

/** The header the push token travels in (the SDK's and a2a-python's spelling). */
export const PUSH_TOKEN_HEADER = 'X-A2A-Notification-Token';

export interface PushOptions {
  /** Hosts webhooks may use although their addresses are private (http allowed too): `name`, `.domain`, `host:port`. */
  readonly allowPrivateHosts?: readonly string[];
  /** Deadline of one POST (connect, headers, body). */
  readonly timeoutMs?: number;
  /** Attempts per notification, the first included. */
  readonly attempts?: number;
  /** Wait before the first retry; doubled for each further one. */
  readonly backoffMs?: number;
  /** How long `close` lets deliveries in flight finish before aborting them. */
  readonly drainMs?: number;
  /** Tests only: name resolution for the checks, and safeFetch's dial override (see SafeFetchOptions). */
  readonly resolve?: Resolver;
  readonly testHooks?: SafeFetchOptions['testHooks'];
}

const DEFAULTS = { timeoutMs: 10_000, attempts: 4, backoffMs: 1_000, drainMs: 2_000 };
/** A receiver answers with an acknowledgement; nothing it says is used. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_CONFIGS_PER_TASK = 10;
const MAX_URL_CHARS = 2048;
/** Tasks whose last state is remembered (to tell state changes from progress events); oldest forgotten first. */
const MAX_REMEMBERED = 10_000;
const HEADER_VALUE = /^[\x20-\x7e]*$/;
const AUTH_SCHEME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

/**
 * A webhook URL the gateway will not call, with the reason and what to do, in words for the caller. A
 * plain RequestMalformedError (JSON-RPC -32602): the SDK maps errors by class name, so no subclass.
 */
function urlRefused(detail: string): RequestMalformedError {
  return new RequestMalformedError(`push-notification URL refused: ${detail}`);
}

function privateHostHint(u: URL): string {
  const port = u.port || (u.protocol === 'http:' ? '80' : '443');
  return `if the receiver runs on the gateway operator's own network, the operator can add "${u.hostname}:${port}" to pushAllowPrivateHosts in the gateway config`;
}

/** Rewrites safeFetch's refusal (worded for the extension's card fetch) for a webhook URL. */
function refusal(e: SafeFetchError, u: URL | undefined): RequestMalformedError {
  switch (e.code) {
    case 'invalid-url':
      return urlRefused('it is not an absolute URL; send a full https:// URL');
    case 'credentials-in-url':
      return urlRefused(
        'it carries a user name or password; remove them and put the receiver\'s credentials in the config\'s "authentication" (scheme and credentials) or "token"',
      );
    case 'insecure-scheme':
      return urlRefused(
        `only https webhooks are called, not ${u?.protocol.replace(':', '') ?? 'this scheme'}; use an https URL${u?.protocol === 'http:' ? `, or ${privateHostHint(u)}` : ''}`,
      );
    case 'blocked-address':
      return urlRefused(
        `${u?.hostname ?? 'the host'}${e.details.address && e.details.address !== u?.hostname ? ` (${e.details.address})` : ''} is a ${e.details.range ?? 'non-public'} address, not a public one; use a webhook on a public address${u ? `, or ${privateHostHint(u)}` : ''}`,
      );
    case 'dns':
      return urlRefused(`the host name ${u?.hostname ?? ''} does not resolve; check the URL`);
    case 'redirect':
      return urlRefused('the receiver answered with a redirect, which is never followed; register the final URL');
    default:
      return urlRefused(e.message);
  }
}

/**
 * The checks a webhook URL must pass before a config is stored: everything safeFetch checks before it
 * dials (scheme, credentials, literal addresses, allowed hosts — by running safeFetch with an aborted
 * signal, so the rules are safeFetch's own and nothing is sent), then the name's addresses, each of
 * which must be public unicast unless the host is allowed.
 */
export async function checkPushUrl(
  url: string,
  opts: Pick<PushOptions, 'allowPrivateHosts' | 'resolve'>,
): Promise<void> {
  if (url.length > MAX_URL_CHARS) throw urlRefused(`it is longer than ${MAX_URL_CHARS} characters`);
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {
    u = undefined;
  }
  try {
    await safeFetch(url, {
      method: 'POST',
      allowPrivateHosts: opts.allowPrivateHosts ?? [],
      signal: AbortSignal.abort(),
    });
  } catch (e) {
    if (!(e instanceof SafeFetchError)) throw e;
    if (e.code !== 'aborted') throw refusal(e, u);
  }
  if (!u) throw urlRefused('it is not an absolute URL; send a full https:// URL');
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return; // literal addresses were judged above
  if (hostMatches(host, opts.allowPrivateHosts, u.port || (u.protocol === 'https:' ? '443' : '80'))) return;
  let answers: readonly { address: string }[];
  try {
    answers = await (opts.resolve ?? ((h: string) => dnsLookup(h, { all: true, verbatim: true })))(host);
  } catch {
    answers = [];
  }
  if (answers.length === 0) throw refusal(new SafeFetchError('dns', '', url), u);
  for (const a of answers) {
    const v = checkAddress(a.address);
    if (!v.allowed)
      throw refusal(new SafeFetchError('blocked-address', '', url, { address: a.address, range: v.range }), u);
  }
}

function checkHeaderValue(value: string, field: string, max: number): void {
  if (value.length > max)
    throw new RequestMalformedError(`push-notification config: ${field} is longer than ${max} characters`);
  if (!HEADER_VALUE.test(value))
    throw new RequestMalformedError(
      `push-notification config: ${field} must be printable ASCII (it is sent in an HTTP header)`,
    );
}

/** Checks a config as the caller sent it (URL included) and gives it its id; nothing is stored yet. */
export async function validatePushConfig(
  cfg: TaskPushNotificationConfig,
  opts: PushOptions,
  defaultId: () => string,
): Promise<TaskPushNotificationConfig> {
  if (!cfg.url)
    throw new RequestMalformedError(
      'push-notification config: "url" is required (an https URL the gateway POSTs the task to)',
    );
  if (cfg.id.length > 200 || !HEADER_VALUE.test(cfg.id))
    throw new RequestMalformedError('push-notification config: "id" must be at most 200 printable ASCII characters');
  checkHeaderValue(cfg.token, 'token', 1024);
  const auth = cfg.authentication;
  if (auth && (auth.scheme || auth.credentials)) {
    if (!AUTH_SCHEME.test(auth.scheme))
      throw new RequestMalformedError(
        'push-notification config: authentication.scheme must be an HTTP authentication scheme such as "Bearer"',
      );
    if (!auth.credentials)
      throw new RequestMalformedError('push-notification config: authentication.credentials is required with a scheme');
    checkHeaderValue(auth.credentials, 'authentication.credentials', 8192);
  }
  await checkPushUrl(cfg.url, opts);
  return {
    ...cfg,
    id: cfg.id || defaultId(),
    authentication: auth && (auth.scheme || auth.credentials) ? auth : undefined,
  };
}

/** The id a config sent with SendMessage gets when it names none: the same URL gives the same id, so a resend replaces rather than adds. */
export function defaultIdForUrl(url: string): string {
  return `url-${createHash('sha256').update(url).digest('hex').slice(0, 16)}`;
}

export function newPushConfigId(): string {
  return randomUUID();
}

/** The stored form back in the SDK's model. */
export function configOf(row: PushConfigRow): TaskPushNotificationConfig {
  return TaskPushNotificationConfig.fromJSON(JSON.parse(row.config));
}

/** Origin only: a webhook URL's path or query may itself be the secret (e.g. chat webhooks). */
function shownUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return '(invalid URL)';
  }
}

/** The event hub the gateway uses when push is on: every batch this process commits also reaches the notifier. */
export class PushingEventHub extends EventHub {
  constructor(private readonly onCommit: (agent: string, taskId: string, notice: AppendNotice) => void) {
    super();
  }

  override publish(agent: string, taskId: string, notice: AppendNotice | undefined): void {
    super.publish(agent, taskId, notice);
    // `undefined` is another instance's append: that instance delivers its own state changes.
    if (notice) this.onCommit(agent, taskId, notice);
  }
}

interface Lane {
  readonly agent: string;
  readonly taskId: string;
  readonly configId: string;
  dirty: boolean;
  running: Promise<void> | undefined;
  /** The state last delivered to this receiver: the same state is not sent twice in a row. */
  lastSent: TaskState | undefined;
}

type Outcome = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly why: string };

export class PushNotifier {
  private readonly lastState = new Map<string, TaskState>();
  private readonly lanes = new Map<string, Lane>();
  /** Config look-ups of state changes not yet turned into lanes (close waits for them too). */
  private readonly fanning = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private closed = false;
  readonly opts: PushOptions;

  constructor(
    private readonly store: GatewayStore,
    opts: PushOptions,
    private readonly log: (line: string) => void,
  ) {
    this.opts = opts;
  }

  /** Checks and stores a config for a task the caller owns (ownership is the caller's check). */
  async save(agent: string, taskId: string, cfg: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    const existing = await this.store.listPushConfigs(agent, taskId);
    if (existing.length >= MAX_CONFIGS_PER_TASK && !existing.some((r) => r.id === cfg.id)) {
      throw new RequestMalformedError(
        `task ${taskId} already has ${MAX_CONFIGS_PER_TASK} push-notification configs; delete one first`,
      );
    }
    const stored: TaskPushNotificationConfig = { ...cfg, taskId };
    await this.store.putPushConfig(agent, taskId, stored.id, JSON.stringify(TaskPushNotificationConfig.toJSON(stored)));
    return stored;
  }

  /** Called after each batch this process commits; returns at once (delivery is never on the request path). */
  onCommit(agent: string, taskId: string, state: TaskState): void {
    if (this.closed) return;
    const k = EventHub.key(agent, taskId);
    if (this.lastState.get(k) === state) return; // a progress event, not a state change
    this.lastState.delete(k);
    this.lastState.set(k, state);
    if (this.lastState.size > MAX_REMEMBERED) this.lastState.delete(this.lastState.keys().next().value as string);
    const fan = this.store.listPushConfigs(agent, taskId).then(
      (rows) => {
        for (const r of rows) this.kick(agent, taskId, r.id);
      },
      (e: unknown) => this.log(`push: cannot read the push configs of task ${taskId}: ${(e as Error).message}`),
    );
    this.fanning.add(fan);
    void fan.finally(() => this.fanning.delete(fan));
  }

  /** A config registered with SendMessage: the task may have changed state before it was stored. */
  catchUp(agent: string, taskId: string, configId: string): void {
    if (!this.closed) this.kick(agent, taskId, configId);
  }

  private kick(agent: string, taskId: string, configId: string): void {
    const k = `${EventHub.key(agent, taskId)}\u0000${configId}`;
    let lane = this.lanes.get(k);
    if (!lane) {
      lane = { agent, taskId, configId, dirty: false, running: undefined, lastSent: undefined };
      this.lanes.set(k, lane);
      if (this.lanes.size > MAX_REMEMBERED) {
        for (const [key, l] of this.lanes) {
          if (!l.running) {
            this.lanes.delete(key);
            break;
          }
        }
      }
    }
    lane.dirty = true;
    if (!lane.running) {
      const l = lane;
      l.running = this.drive(l).finally(() => (l.running = undefined));
    }
  }

  private async drive(lane: Lane): Promise<void> {
    while (lane.dirty && !this.closed) {
      lane.dirty = false;
      try {
        await this.deliver(lane);
      } catch (e) {
        this.log(`push: task ${lane.taskId}, config ${lane.configId}: ${(e as Error).message}`);
      }
    }
  }

  private async deliver(lane: Lane): Promise<void> {
    const [task, rows] = await Promise.all([
      this.store.getTask(lane.agent, lane.taskId),
      this.store.listPushConfigs(lane.agent, lane.taskId),
    ]);
    const row = rows.find((r) => r.id === lane.configId);
    if (!task || !row) return; // deleted meanwhile
    if (lane.lastSent === task.state) return;
    const cfg = configOf(row);
    // The task exactly as GetTask would answer it (the snapshot is Task.toJSON), in the StreamResponse
    // shape the SDK's sender and streams use.
    const body = `{"task":${task.snapshot}}`;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (cfg.token) headers[PUSH_TOKEN_HEADER] = cfg.token;
    if (cfg.authentication?.scheme && cfg.authentication.credentials)
      headers.authorization = `${cfg.authentication.scheme} ${cfg.authentication.credentials}`;
    const attempts = Math.max(1, this.opts.attempts ?? DEFAULTS.attempts);
    let last: Outcome = { ok: false, retry: false, why: 'not sent' };
    for (let i = 1; i <= attempts; i++) {
      last = await this.post(cfg.url, body, headers);
      if (last.ok) {
        lane.lastSent = task.state;
        return;
      }
      // A newer state supersedes this one: the lane's next round sends the task as it is then.
      if (!last.retry || i === attempts || this.closed || lane.dirty) break;
      await sleep((this.opts.backoffMs ?? DEFAULTS.backoffMs) * 2 ** (i - 1), this.abort.signal, { unref: true });
    }
    if (!last.ok)
      this.log(
        `push: task ${lane.taskId} (state ${task.state}) to ${shownUrl(cfg.url)}, config ${cfg.id}: not delivered: ${last.why}`,
      );
  }

  private async post(url: string, body: string, headers: Record<string, string>): Promise<Outcome> {
    try {
      const res = await safeFetch(url, {
        method: 'POST',
        body,
        headers,
        allowPrivateHosts: this.opts.allowPrivateHosts ?? [],
        timeoutMs: this.opts.timeoutMs ?? DEFAULTS.timeoutMs,
        maxBytes: MAX_RESPONSE_BYTES,
        signal: this.abort.signal,
        ...(this.opts.resolve ? { resolve: this.opts.resolve } : {}),
        ...(this.opts.testHooks ? { testHooks: this.opts.testHooks } : {}),
      });
      if (res.status >= 200 && res.status < 300) return { ok: true };
      const retry = res.status >= 500 || res.status === 408 || res.status === 429;
      return { ok: false, retry, why: `the receiver answered HTTP ${res.status}` };
    } catch (e) {
      if (!(e instanceof SafeFetchError)) return { ok: false, retry: true, why: (e as Error).message ?? String(e) };
      // Refusals do not get better by retrying; network trouble may.
      const retry = e.code === 'dns' || e.code === 'connect' || e.code === 'timeout';
      let u: URL | undefined;
      try {
        u = new URL(url);
      } catch {
        u = undefined;
      }
      const message =
        e.code === 'connect' || e.code === 'timeout' || e.code === 'aborted'
          ? e.message.split(url).join(shownUrl(url))
          : refusal(e, u).message;
      return { ok: false, retry, why: `${e.code}: ${message}` };
    }
  }

  /** Lets deliveries in flight finish for a short while (the last states of tasks a shutdown ended), then aborts the rest. */
  async close(): Promise<void> {
    if (this.closed) return;
    let timer: NodeJS.Timeout | undefined;
    const drained = (async () => {
      await Promise.all([...this.fanning]);
      await Promise.all([...this.lanes.values()].map((l) => l.running));
    })();
    await Promise.race([
      drained,
      new Promise<void>((r) => (timer = setTimeout(r, this.opts.drainMs ?? DEFAULTS.drainMs))),
    ]);
    clearTimeout(timer);
    this.closed = true;
    this.abort.abort();
    await Promise.all([...this.lanes.values()].map((l) => l.running));
  }
}
