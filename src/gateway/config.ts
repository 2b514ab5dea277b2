/**
 * The gateway's config file (JSON). Every error names the file, the field and what to do, because the
 * person reading it is an operator starting a service, not a developer reading a stack trace.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Capabilities } from './agents/localAgent';
import type { SkillInfo } from './cards';
import type { GatewayLimits } from './gatewayContext';
import type { RequestLimits } from './server';

export type RemoteAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'header'; readonly header: string; readonly value: string };

export interface RemoteAgentConfig {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  /** True when the config gave no description (`description` is then a generated default the remote's card may replace). */
  readonly descriptionIsDefault?: boolean;
  /** The remote's pinned endpoint: requests go here and nowhere else (never to a URL a card names). */
  readonly url: string;
  readonly protocolBinding: 'JSONRPC' | 'HTTP+JSON';
  /** The A2A version to speak; unset: the one the remote's card offers for this binding (1.0 until it is read). */
  readonly protocolVersion?: '1.0' | '0.3';
  /**
   * The tenant named in A2A 1.0 requests to the remote (the path prefix over HTTP+JSON, `tenant` over
   * JSON-RPC); unset: the one the remote's card names for this URL and binding (none until it is read).
   */
  readonly tenant?: string;
  readonly auth: RemoteAuth;
  readonly skills: readonly SkillInfo[];
  /**
   * Where the remote's own agent card is read (its skills, modes and capabilities feed the route card);
   * default: `<url>/.well-known/agent-card.json`, then `<origin>/.well-known/agent-card.json`.
   */
  readonly cardUrl?: string;
  /**
   * URIs of A2A extensions the remote speaks without declaring them in its card (Gemini CLI's A2A
   * server speaks its development-tool extension but its card lists none): the route card lists them
   * with the ones the remote's card declares.
   */
  readonly extensions?: readonly string[];
}

export interface TokenConfig {
  readonly principal: string;
  /** hex SHA-256 of the token: the config file need not hold the secret itself. */
  readonly sha256: string;
}

export type StoreConfig =
  | { readonly kind: 'sqlite'; readonly file?: string }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      /**
       * `takeOverAfterSeconds`: how long an instance that records no heartbeat (it died, or cannot reach
       * the database) keeps its running tasks before another instance takes them over (default 30).
       */
      readonly takeOverAfterSeconds?: number;
      /**
       * `listenUrl`: the connection the store LISTENs on, when `url` goes through a pooler in
       * transaction mode (PgBouncer), which does not pass notifications on: a direct or
       * session-pooled connection to the same database (default: `url`).
       */
      readonly listenUrl?: string;
    };

/** `retention`: how long finished tasks and their events are kept (docs/gateway.md "Retention"). */
export interface RetentionConfig {
  /** `finishedTaskHours`: finished tasks are deleted this long after they ended; 0 keeps them (default 168). */
  readonly finishedTaskHours?: number;
  /** `maxStoreMb`: above this, the oldest finished tasks are deleted first; 0: no cap (default 2048). */
  readonly maxStoreMb?: number;
  /** `replayWindowMinutes`: a finished task's events are compacted this long after it ended (default 60). */
  readonly replayWindowMinutes?: number;
  /** `intervalSeconds`: how often retention runs (default 60). */
  readonly intervalSeconds?: number;
}

export interface GatewayConfig {
  readonly host?: string;
  readonly port?: number;
  readonly publicUrl?: string;
  /**
   * The gateway's signing key (Ed25519 JWK or PKCS#8 PEM, mode 0600); unset: `<state>/gateway-key.jwk`,
   * created on first start. Instances of one team gateway name the same key, so every card and signed
   * result carries one identity whichever instance answers; the file must exist.
   */
  readonly keyFile?: string;
  readonly roots: readonly string[];
  readonly store?: StoreConfig;
  readonly tokens: readonly TokenConfig[];
  /**
   * Serve requests that carry no Authorization header as this principal. Only for a gateway bound to a
   * loopback address (the demo's second gateway, a conformance run): the gateway refuses to start with it
   * on any other address. A wrong token is still refused.
   */
  readonly anonymousPrincipal?: string;
  readonly remoteAgents: readonly RemoteAgentConfig[];
  /** `true`: every detected local agent; a list: only those ids; `false`: none. */
  readonly localAgents: boolean | readonly string[];
  /** Hosts push-notification webhooks may use although private (`name`, `.domain`, `host:port`); default none. */
  readonly pushAllowPrivateHosts: readonly string[];
  readonly limits: {
    readonly capabilities?: Capabilities;
    readonly defaultDeadlineSeconds?: number;
    readonly maxDeadlineSeconds?: number;
    readonly cancelGraceSeconds?: number;
    readonly maxBodyBytes?: number;
    /** Per-request limits (docs/gateway.md "Request limits"). */
    readonly headersTimeoutSeconds?: number;
    readonly bodyIdleSeconds?: number;
    readonly bodyTimeoutSeconds?: number;
    readonly maxJsonDepth?: number;
    readonly maxJsonMembers?: number;
    /** Local runs one principal may have at once on an instance; the rest wait their turn. */
    readonly maxRunningTasksPerPrincipal?: number;
  };
  /** Guards of the delegations agents start (docs/gateway.md "Agents that delegate"); unset: the defaults. */
  readonly delegation: DelegationConfig;
  /** Retention of finished tasks; unset fields: the defaults. */
  readonly retention: RetentionConfig;
}

export interface DelegationConfig {
  /** `maxDepth`: 0 to 3 (default 1: agents' children may not delegate further). */
  readonly maxDepth?: number;
  /** `maxBreadth`: children per task (default 3). */
  readonly maxBreadth?: number;
  /** `burst`: agent-started delegations the gateway admits per window. */
  readonly burst?: { readonly max: number; readonly windowSeconds: number };
  /** `consent`: per target agent id, "allow" (no question) or "deny"; others are asked. */
  readonly consent?: Readonly<Record<string, 'allow' | 'deny'>>;
  /** `consentTimeoutSeconds`: how long the user has to answer (default 40). */
  readonly consentTimeoutSeconds?: number;
}

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly path: string,
    problem: string,
  ) {
    super(`${file}: ${path ? `${path}: ` : ''}${problem}`);
    this.name = 'ConfigError';
  }
}

type Obj = Record<string, unknown>;
const ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;

class Reader {
  constructor(
    readonly file: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  fail(path: string, problem: string): never {
    throw new ConfigError(this.file, path, problem);
  }

  obj(v: unknown, path: string): Obj {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) this.fail(path, 'must be an object');
    return v as Obj;
  }

  known(o: Obj, path: string, keys: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (!keys.includes(k))
        this.fail(path ? `${path}.${k}` : k, `is not a setting; known settings here: ${keys.join(', ')}`);
    }
  }

  str(o: Obj, k: string, path: string, required: true): string;
  str(o: Obj, k: string, path: string, required?: false): string | undefined;
  str(o: Obj, k: string, path: string, required = false): string | undefined {
    const v = o[k];
    const p = path ? `${path}.${k}` : k;
    if (v === undefined) return required ? this.fail(p, 'is required') : undefined;
    if (typeof v !== 'string' || v === '') this.fail(p, 'must be a non-empty string');
    return v;
  }

  num(o: Obj, k: string, path: string, min: number, max: number): number | undefined {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      this.fail(path ? `${path}.${k}` : k, `must be a whole number from ${min} to ${max}`);
    return v;
  }

  url(o: Obj, k: string, path: string, required: boolean): string | undefined {
    const v = required ? this.str(o, k, path, true) : this.str(o, k, path);
    if (v === undefined) return undefined;
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      return this.fail(`${path}.${k}`, `must be an absolute http(s) URL, got ${JSON.stringify(v)}`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      this.fail(`${path}.${k}`, 'must use https (or http for hosts on your own network)');
    if (u.username || u.password) this.fail(`${path}.${k}`, 'must not carry credentials; put them under "auth"');
    return v.replace(/\/+$/, '');
  }

  /** A secret given inline, from an environment variable or from a file. */
  secret(o: Obj, base: string, path: string): string | undefined {
    const inline = this.str(o, base, path);
    const envName = this.str(o, `${base}Env`, path);
    const file = this.str(o, `${base}File`, path);
    const given = [inline, envName, file].filter((x) => x !== undefined).length;
    if (given > 1) this.fail(path, `set only one of ${base}, ${base}Env, ${base}File`);
    if (envName !== undefined) {
      const v = this.env[envName];
      if (!v)
        this.fail(
          `${path}.${base}Env`,
          `environment variable ${envName} is not set; export it before starting the gateway`,
        );
      return v;
    }
    if (file !== undefined) {
      try {
        return readFileSync(file, 'utf8').trim();
      } catch (e) {
        return this.fail(`${path}.${base}File`, `cannot read ${file}: ${(e as Error).message}`);
      }
    }
    return inline;
  }
}

function readCaps(r: Reader, v: unknown, path: string): Capabilities {
  const o = r.obj(v, path);
  r.known(o, path, ['write', 'shell', 'network']);
  const flag = (k: string): boolean => {
    const x = o[k];
    if (x === undefined) return false;
    if (typeof x !== 'boolean') r.fail(`${path}.${k}`, 'must be true or false');
    return x;
  };
  return { write: flag('write'), shell: flag('shell'), network: flag('network') };
}

export function parseGatewayConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const r: Reader = new Reader(file, env);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(file, '', `is not valid JSON (${(e as Error).message}); fix the syntax`);
  }
  const top = r.obj(raw, '');
  r.known(top, '', [
    '$schema',
    'host',
    'port',
    'publicUrl',
    'keyFile',
    'roots',
    'store',
    'tokens',
    'anonymous',
    'agents',
    'localAgents',
    'limits',
    'pushAllowPrivateHosts',
    'maxDepth',
    'maxBreadth',
    'burst',
    'consent',
    'consentTimeoutSeconds',
    'retention',
  ]);
  const host = r.str(top, 'host', '');
  const port = r.num(top, 'port', '', 0, 65535);
  const publicUrl = r.url(top, 'publicUrl', '', false);
  const keyFile = r.str(top, 'keyFile', '');
  if (keyFile !== undefined && !keyFile.startsWith('/'))
    r.fail('keyFile', 'must be an absolute path to the signing key shared by the instances');

  const roots: string[] = [];
  if (top.roots !== undefined) {
    if (!Array.isArray(top.roots)) r.fail('roots', 'must be a list of absolute folder paths');
    top.roots.forEach((x, i) => {
      if (typeof x !== 'string' || !x.startsWith('/')) r.fail(`roots[${i}]`, 'must be an absolute folder path');
      roots.push(x);
    });
  }

  let store: StoreConfig | undefined;
  if (top.store !== undefined) {
    const s = r.obj(top.store, 'store');
    const kind = r.str(s, 'kind', 'store', true);
    if (kind === 'sqlite') {
      r.known(s, 'store', ['kind', 'file']);
      const f = r.str(s, 'file', 'store');
      store = { kind: 'sqlite', ...(f ? { file: f } : {}) };
    } else if (kind === 'postgres') {
      r.known(s, 'store', [
        'kind',
        'url',
        'urlEnv',
        'urlFile',
        'listenUrl',
        'listenUrlEnv',
        'listenUrlFile',
        'takeOverAfterSeconds',
      ]);
      const url = r.secret(s, 'url', 'store');
      if (!url) r.fail('store', 'needs url, urlEnv or urlFile: a postgres:// connection string');
      if (!/^postgres(ql)?:\/\//.test(url)) r.fail('store.url', 'must be a postgres:// connection string');
      const listenUrl = r.secret(s, 'listenUrl', 'store');
      if (listenUrl !== undefined && !/^postgres(ql)?:\/\//.test(listenUrl))
        r.fail('store.listenUrl', 'must be a postgres:// connection string (a direct connection to the same database)');
      const takeOver = r.num(s, 'takeOverAfterSeconds', 'store', 1, 3600);
      store = {
        kind: 'postgres',
        url,
        ...(listenUrl !== undefined ? { listenUrl } : {}),
        ...(takeOver !== undefined ? { takeOverAfterSeconds: takeOver } : {}),
      };
    } else r.fail('store.kind', 'must be "sqlite" or "postgres"');
  }

  const tokens: TokenConfig[] = [];
  if (top.tokens !== undefined) {
    if (!Array.isArray(top.tokens))
      r.fail('tokens', 'must be a list of {"principal": …, "sha256" | "tokenEnv" | "tokenFile": …}');
    top.tokens.forEach((t, i) => {
      const p = `tokens[${i}]`;
      const o = r.obj(t, p);
      r.known(o, p, ['principal', 'sha256', 'token', 'tokenEnv', 'tokenFile']);
      const principal = r.str(o, 'principal', p, true);
      const sha = r.str(o, 'sha256', p);
      const secret = r.secret(o, 'token', p);
      if ((sha === undefined) === (secret === undefined))
        r.fail(p, 'needs exactly one of sha256 (hex SHA-256 of the token), token, tokenEnv, tokenFile');
      if (sha !== undefined && !/^[0-9a-f]{64}$/i.test(sha))
        r.fail(`${p}.sha256`, 'must be 64 hex digits (e.g. printf %s "$TOKEN" | sha256sum)');
      if (secret !== undefined && secret.length < 16)
        r.fail(p, 'the token is shorter than 16 characters; use a random one (e.g. openssl rand -base64 32)');
      tokens.push({ principal, sha256: sha?.toLowerCase() ?? sha256HexOf(secret ?? '') });
    });
  }

  let anonymousPrincipal: string | undefined;
  if (top.anonymous !== undefined) {
    const a = r.obj(top.anonymous, 'anonymous');
    r.known(a, 'anonymous', ['principal']);
    anonymousPrincipal = r.str(a, 'principal', 'anonymous', true);
    if (!anonymousPrincipal || !/^[A-Za-z0-9._@-]{1,64}$/.test(anonymousPrincipal))
      r.fail('anonymous.principal', 'must be a principal name (letters, digits, ".", "_", "@", "-")');
    if (host && !isLoopbackHost(host))
      r.fail(
        'anonymous',
        `is allowed only on a loopback address (127.0.0.1, ::1, localhost), not ${host}: give every client a token instead`,
      );
  }

  const remoteAgents: RemoteAgentConfig[] = [];
  if (top.agents !== undefined) {
    const agents = r.obj(top.agents, 'agents');
    for (const [id, v] of Object.entries(agents)) {
      const p = `agents.${id}`;
      if (!ID.test(id))
        r.fail(p, 'an agent id must be lower-case letters, digits, ".", "_" or "-" (it becomes the route /a2a/<id>)');
      const o = r.obj(v, p);
      r.known(o, p, [
        'kind',
        'name',
        'description',
        'url',
        'cardUrl',
        'protocolBinding',
        'protocolVersion',
        'tenant',
        'auth',
        'skills',
        'extensions',
      ]);
      const kind = r.str(o, 'kind', p) ?? 'remote';
      if (kind !== 'remote') r.fail(`${p}.kind`, 'must be "remote" (local agents are detected, not configured)');
      const url = r.url(o, 'url', p, true) as string;
      // Validated like url, but kept as written: a card URL's trailing slash may matter to its server.
      const cardUrl = r.url(o, 'cardUrl', p, false) === undefined ? undefined : (o.cardUrl as string);
      if (cardUrl !== undefined && (cardUrl.includes('#') || new URL(cardUrl).pathname === '/')) {
        r.fail(`${p}.cardUrl`, 'must be the full URL of the agent card, e.g. https://host/.well-known/agent-card.json');
      }
      const binding = r.str(o, 'protocolBinding', p) ?? 'JSONRPC';
      if (binding !== 'JSONRPC' && binding !== 'HTTP+JSON')
        r.fail(`${p}.protocolBinding`, 'must be "JSONRPC" or "HTTP+JSON"');
      const version = r.str(o, 'protocolVersion', p);
      if (version !== undefined && version !== '1.0' && version !== '0.3')
        r.fail(`${p}.protocolVersion`, 'must be "1.0" or "0.3" (or left out: the remote\'s card says)');
      const tenant = r.str(o, 'tenant', p);
      if (tenant !== undefined && (tenant === '' || tenant.length > 256 || /[\s/]/.test(tenant)))
        r.fail(
          `${p}.tenant`,
          'must be the tenant id the remote serves (no spaces or "/"), or left out: the remote\'s card says',
        );
      if (tenant !== undefined && version === '0.3')
        r.fail(`${p}.tenant`, 'A2A 0.3 has no tenants: leave it out, or speak "protocolVersion": "1.0"');
      let auth: RemoteAuth = { kind: 'none' };
      if (o.auth !== undefined) {
        const a = r.obj(o.auth, `${p}.auth`);
        r.known(a, `${p}.auth`, ['bearer', 'bearerEnv', 'bearerFile', 'header', 'value', 'valueEnv', 'valueFile']);
        const bearer = r.secret(a, 'bearer', `${p}.auth`);
        const header = r.str(a, 'header', `${p}.auth`);
        const value = r.secret(a, 'value', `${p}.auth`);
        if (bearer !== undefined && (header !== undefined || value !== undefined))
          r.fail(`${p}.auth`, 'use either bearer… or header + value…, not both');
        if (bearer !== undefined) auth = { kind: 'bearer', token: bearer };
        else if (header !== undefined) {
          if (value === undefined) r.fail(`${p}.auth`, 'header needs value, valueEnv or valueFile');
          if (!/^[A-Za-z0-9-]+$/.test(header)) r.fail(`${p}.auth.header`, 'must be an HTTP header name');
          auth = { kind: 'header', header, value };
        } else r.fail(`${p}.auth`, 'needs bearer, bearerEnv, bearerFile, or header with value/valueEnv/valueFile');
      }
      const skills: RemoteAgentConfig['skills'][number][] = [];
      if (o.skills !== undefined) {
        if (!Array.isArray(o.skills)) r.fail(`${p}.skills`, 'must be a list of {"id", "name", "description"}');
        o.skills.forEach((s, i) => {
          const sp = `${p}.skills[${i}]`;
          const so = r.obj(s, sp);
          r.known(so, sp, ['id', 'name', 'description', 'tags']);
          const tags = Array.isArray(so.tags) ? so.tags.filter((t): t is string => typeof t === 'string') : [];
          skills.push({
            id: r.str(so, 'id', sp, true),
            name: r.str(so, 'name', sp) ?? r.str(so, 'id', sp, true),
            description: r.str(so, 'description', sp) ?? '',
            tags,
          });
        });
      }
      const extensions: string[] = [];
      if (o.extensions !== undefined) {
        if (
          !Array.isArray(o.extensions) ||
          !o.extensions.every((u) => typeof u === 'string' && /^[a-z][a-z0-9+.-]*:\S+$/i.test(u))
        )
          r.fail(`${p}.extensions`, 'must be a list of extension URIs, e.g. ["https://example.com/ext/v1"]');
        extensions.push(...new Set(o.extensions as string[]));
      }
      const description = r.str(o, 'description', p);
      remoteAgents.push({
        id,
        name: r.str(o, 'name', p) ?? id,
        description: description ?? `Remote A2A agent at ${url}`,
        ...(description === undefined ? { descriptionIsDefault: true } : {}),
        ...(cardUrl !== undefined ? { cardUrl } : {}),
        url,
        protocolBinding: binding as RemoteAgentConfig['protocolBinding'],
        ...(version ? { protocolVersion: version as NonNullable<RemoteAgentConfig['protocolVersion']> } : {}),
        ...(tenant !== undefined ? { tenant } : {}),
        auth,
        skills,
        ...(extensions.length ? { extensions } : {}),
      });
    }
  }

  let localAgents: boolean | string[] = true;
  if (top.localAgents !== undefined) {
    if (typeof top.localAgents === 'boolean') localAgents = top.localAgents;
    else if (Array.isArray(top.localAgents) && top.localAgents.every((x) => typeof x === 'string'))
      localAgents = top.localAgents as string[];
    else r.fail('localAgents', 'must be true, false, or a list of agent ids such as ["formatter", "lint-fix"]');
  }

  const pushAllowPrivateHosts: string[] = [];
  if (top.pushAllowPrivateHosts !== undefined) {
    const hint =
      'must be a list of host names the gateway may send push notifications to although they are private, e.g. ["hooks.internal", ".corp.example", "10.0.0.5:8443"]';
    if (!Array.isArray(top.pushAllowPrivateHosts)) r.fail('pushAllowPrivateHosts', hint);
    top.pushAllowPrivateHosts.forEach((h, i) => {
      if (typeof h !== 'string' || !/^(\.?[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(h.trim()))
        r.fail(`pushAllowPrivateHosts[${i}]`, hint);
      pushAllowPrivateHosts.push(h.trim());
    });
  }

  const limits: { -readonly [K in keyof GatewayConfig['limits']]: GatewayConfig['limits'][K] } = {};
  if (top.limits !== undefined) {
    const l = r.obj(top.limits, 'limits');
    r.known(l, 'limits', [
      'capabilities',
      'defaultDeadlineSeconds',
      'maxDeadlineSeconds',
      'cancelGraceSeconds',
      'maxBodyBytes',
      'headersTimeoutSeconds',
      'bodyIdleSeconds',
      'bodyTimeoutSeconds',
      'maxJsonDepth',
      'maxJsonMembers',
      'maxRunningTasksPerPrincipal',
    ]);
    if (l.capabilities !== undefined) limits.capabilities = readCaps(r, l.capabilities, 'limits.capabilities');
    limits.defaultDeadlineSeconds = r.num(l, 'defaultDeadlineSeconds', 'limits', 1, 7 * 24 * 3600);
    limits.maxDeadlineSeconds = r.num(l, 'maxDeadlineSeconds', 'limits', 1, 7 * 24 * 3600);
    limits.cancelGraceSeconds = r.num(l, 'cancelGraceSeconds', 'limits', 1, 600);
    limits.maxBodyBytes = r.num(l, 'maxBodyBytes', 'limits', 1024, 256 * 1024 * 1024);
    limits.headersTimeoutSeconds = r.num(l, 'headersTimeoutSeconds', 'limits', 1, 600);
    limits.bodyIdleSeconds = r.num(l, 'bodyIdleSeconds', 'limits', 1, 600);
    limits.bodyTimeoutSeconds = r.num(l, 'bodyTimeoutSeconds', 'limits', 1, 3600);
    // Below 16 levels ordinary A2A requests no longer fit; far above 1000 JSON.stringify overflows its stack.
    limits.maxJsonDepth = r.num(l, 'maxJsonDepth', 'limits', 16, 1000);
    limits.maxJsonMembers = r.num(l, 'maxJsonMembers', 'limits', 100, 10_000_000);
    limits.maxRunningTasksPerPrincipal = r.num(l, 'maxRunningTasksPerPrincipal', 'limits', 1, 1000);
  }

  const delegation: { -readonly [K in keyof DelegationConfig]: DelegationConfig[K] } = {};
  delegation.maxDepth = r.num(top, 'maxDepth', '', 0, 3);
  delegation.maxBreadth = r.num(top, 'maxBreadth', '', 1, 100);
  delegation.consentTimeoutSeconds = r.num(top, 'consentTimeoutSeconds', '', 1, 600);
  if (top.burst !== undefined) {
    const b = r.obj(top.burst, 'burst');
    r.known(b, 'burst', ['max', 'windowSeconds']);
    const max = r.num(b, 'max', 'burst', 1, 10_000);
    const windowSeconds = r.num(b, 'windowSeconds', 'burst', 1, 86_400);
    if (max === undefined || windowSeconds === undefined)
      r.fail('burst', 'needs both "max" and "windowSeconds", e.g. {"max": 10, "windowSeconds": 60}');
    delegation.burst = { max, windowSeconds };
  }
  if (top.consent !== undefined) {
    const c = r.obj(top.consent, 'consent');
    const consent: Record<string, 'allow' | 'deny'> = {};
    for (const [id, v] of Object.entries(c)) {
      if (v !== 'allow' && v !== 'deny')
        r.fail(`consent.${id}`, 'must be "allow" (agents may delegate to it without asking you) or "deny"');
      consent[id] = v;
    }
    delegation.consent = consent;
  }

  const retention: { -readonly [K in keyof RetentionConfig]: RetentionConfig[K] } = {};
  if (top.retention !== undefined) {
    const t = r.obj(top.retention, 'retention');
    r.known(t, 'retention', ['finishedTaskHours', 'maxStoreMb', 'replayWindowMinutes', 'intervalSeconds']);
    retention.finishedTaskHours = r.num(t, 'finishedTaskHours', 'retention', 0, 10 * 365 * 24);
    retention.maxStoreMb = r.num(t, 'maxStoreMb', 'retention', 0, 16 * 1024 * 1024);
    retention.replayWindowMinutes = r.num(t, 'replayWindowMinutes', 'retention', 0, 10 * 365 * 24 * 60);
    retention.intervalSeconds = r.num(t, 'intervalSeconds', 'retention', 1, 24 * 3600);
  }

  return {
    ...(host ? { host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(publicUrl ? { publicUrl } : {}),
    ...(keyFile ? { keyFile } : {}),
    roots,
    ...(store ? { store } : {}),
    tokens,
    ...(anonymousPrincipal ? { anonymousPrincipal } : {}),
    remoteAgents,
    localAgents,
    pushAllowPrivateHosts,
    limits,
    delegation,
    retention,
  };
}

export function loadGatewayConfig(file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(
      file,
      '',
      `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); check the path given to --config`,
    );
  }
  return parseGatewayConfig(text, file, env);
}

/** 127.0.0.0/8, ::1 and localhost: the addresses only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

export function sha256HexOf(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** The gateway's limits from the config's `limits` (seconds become milliseconds; what is unset stays the default). */
export function gatewayLimitsOf(limits: GatewayConfig['limits'] | undefined): Partial<GatewayLimits> {
  return {
    ...(limits?.capabilities ? { capabilities: limits.capabilities } : {}),
    ...(limits?.defaultDeadlineSeconds ? { defaultDeadlineMs: limits.defaultDeadlineSeconds * 1000 } : {}),
    ...(limits?.maxDeadlineSeconds ? { maxDeadlineMs: limits.maxDeadlineSeconds * 1000 } : {}),
    ...(limits?.cancelGraceSeconds ? { cancelGraceMs: limits.cancelGraceSeconds * 1000 } : {}),
    ...(limits?.maxRunningTasksPerPrincipal ? { maxRunningPerPrincipal: limits.maxRunningTasksPerPrincipal } : {}),
  };
}

/** The request limits from the config's `limits` (seconds become milliseconds; what is unset stays the default). */
export function requestLimitsOf(limits: GatewayConfig['limits'] | undefined): Partial<RequestLimits> {
  return {
    ...(limits?.maxBodyBytes ? { maxBytes: limits.maxBodyBytes } : {}),
    ...(limits?.headersTimeoutSeconds ? { headersTimeoutMs: limits.headersTimeoutSeconds * 1000 } : {}),
    ...(limits?.bodyIdleSeconds ? { idleMs: limits.bodyIdleSeconds * 1000 } : {}),
    ...(limits?.bodyTimeoutSeconds ? { totalMs: limits.bodyTimeoutSeconds * 1000 } : {}),
    ...(limits?.maxJsonDepth ? { maxDepth: limits.maxJsonDepth } : {}),
    ...(limits?.maxJsonMembers ? { maxMembers: limits.maxJsonMembers } : {}),
  };
}
