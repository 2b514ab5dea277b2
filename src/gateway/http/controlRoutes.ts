/**
 * The local gateway's own controls, for the editor windows that share it (docs/gateway.md "Local
 * gateway"): who it is (`GET /baton/instance`), which folders it serves (`POST /baton/roots`) and a clean
 * stop (`POST /baton/shutdown`). Only the local principal (the token in the 0600 file of the state
 * folder) may call them: a team token reaches agents, never the gateway's own lifecycle.
 */
import { isAbsolute } from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { LOCAL_PRINCIPAL } from '../auth';
import type { TokenAuthenticator } from '../auth';
import type { LiveRoots } from '../liveRoots';
import { GatewayUser } from '../requestContext';
import type { BodyError, BodyLimits } from './jsonBody';
import { jsonBody } from './jsonBody';
import { instanceProof, NONCE_PATTERN } from '../../node/instanceProof';
import { memoryInfo } from '../heapGrowth';
import type { Readiness } from '../readiness';

/** What `GET /baton/instance` answers: enough for a client to tell this gateway from any other process. */
export interface InstanceInfo {
  readonly instanceId: string;
  readonly version: string;
  readonly pid: number;
  readonly roots: readonly string[];
}

/** The store as `GET /baton/instance` reports it. */
export interface StoreInfo {
  readonly kind: 'sqlite' | 'postgres';
  readonly sizeBytes: number;
  /** The retention size cap; null: none. */
  readonly maxBytes: number | null;
  readonly lastRetention?: { readonly at: string; readonly compacted: number; readonly deleted: number };
}

export interface ControlDeps {
  readonly auth: TokenAuthenticator;
  /** Whether this instance should be sent new requests (`GET /baton/ready`, see src/gateway/readiness.ts). */
  readonly ready?: () => Readiness;
  /** The local principal's token, used only to key the instance proof. */
  readonly localToken: string;
  readonly bodyLimits: BodyLimits;
  readonly instance: () => InstanceInfo;
  /** The store's size and retention, for `GET /baton/instance`. */
  readonly storeInfo?: () => Promise<StoreInfo>;
  readonly roots: LiveRoots;
  /** Answers a consent question a child's delegation waits on; false when there is none with that id. */
  readonly answerConsent?: (id: string, allow: boolean) => boolean;
  /** Called once the shutdown request has been answered. */
  readonly shutdown: (why: string) => void;
  readonly log: (line: string) => void;
}

/** What a 503 from `GET /baton/ready` asks a checker to wait before asking again. */
const READY_RETRY_AFTER_SECONDS = 5;

export function controlRouter(deps: ControlDeps): express.Router {
  const router = express.Router();
  // Before the token: who is here, proven with the token but without sending it.
  router.get('/baton/hello', (req: Request, res: Response) => {
    const nonce = req.query.nonce;
    if (typeof nonce !== 'string' || !NONCE_PATTERN.test(nonce))
      return void fail(res, 400, 'INVALID_ARGUMENT', 'send ?nonce=<16 to 128 base64url characters>');
    const { instanceId } = deps.instance();
    res.json({ instanceId, proof: instanceProof(deps.localToken, instanceId, nonce) });
  });
  // Before the token too, and from anywhere: what a balancer's readiness check asks.
  const ready = deps.ready;
  if (ready)
    router.get('/baton/ready', (_req: Request, res: Response) => {
      const r = ready();
      res.setHeader('Cache-Control', 'no-store');
      if (!r.ready) res.status(503).setHeader('Retry-After', String(READY_RETRY_AFTER_SECONDS));
      res.json(r);
    });
  router.use('/baton', deps.auth.middleware(), localOnly, ...jsonBody(deps.bodyLimits, bodyError));
  router.get('/baton/instance', (_req: Request, res: Response, next: NextFunction) => {
    const me = { ...deps.instance(), memory: memoryInfo() };
    if (!deps.storeInfo) return void res.json(me);
    deps.storeInfo().then((store) => res.json({ ...me, store }), next);
  });
  router.post('/baton/roots', (req: Request, res: Response) => {
    const change = rootsChange(req.body);
    if (typeof change === 'string') return void fail(res, 400, 'INVALID_ARGUMENT', change);
    try {
      deps.roots.add(change.add);
    } catch (e) {
      return void fail(res, 400, 'INVALID_ARGUMENT', (e as Error).message);
    }
    deps.roots.remove(change.remove);
    if (change.add.length || change.remove.length)
      deps.log(`roots: +${change.add.length} -${change.remove.length}; serving ${deps.roots.list.length}`);
    res.json({ roots: deps.roots.list });
  });
  // The user's answer to an agent asking to delegate (the question is on the parent task's stream, META.consent).
  router.post('/baton/consent/:id', (req: Request, res: Response) => {
    const body: unknown = req.body;
    const decision = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).decision : undefined;
    if (decision !== 'allow' && decision !== 'deny')
      return void fail(res, 400, 'INVALID_ARGUMENT', 'send {"decision": "allow"} or {"decision": "deny"}');
    const id = String(req.params.id);
    if (!deps.answerConsent?.(id, decision === 'allow'))
      return void fail(res, 404, 'NOT_FOUND', `no consent question ${id} is waiting (it was answered or it expired)`);
    deps.log(`consent ${id}: ${decision}`);
    res.json({ id, decision });
  });
  router.post('/baton/shutdown', (_req: Request, res: Response) => {
    res.once('finish', () => deps.shutdown('asked to shut down'));
    res.status(202).json({ stopping: true });
  });
  return router;
}

function localOnly(_req: Request, res: Response, next: NextFunction): void {
  const user: unknown = res.locals.user;
  if (user instanceof GatewayUser && user.principal === LOCAL_PRINCIPAL) return next();
  fail(res, 403, 'PERMISSION_DENIED', "only the local gateway's own token (<state>/token) may use /baton/*");
}

/** `{"add": [folder…], "remove": [folder…]}`, both optional; folders are absolute paths. */
function rootsChange(body: unknown): { add: string[]; remove: string[] } | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'send {"add": ["/abs/folder"], "remove": ["/abs/folder"]}';
  const b = body as Record<string, unknown>;
  const list = (k: string): string[] | string => {
    const v = b[k] ?? [];
    if (!Array.isArray(v) || !v.every((x): x is string => typeof x === 'string' && isAbsolute(x)))
      return `"${k}" must be a list of absolute folder paths`;
    return v;
  };
  const add = list('add');
  const remove = list('remove');
  if (typeof add === 'string') return add;
  if (typeof remove === 'string') return remove;
  return { add, remove };
}

function bodyError(err: BodyError, _req: Request, res: Response): void {
  fail(res, err.kind === 'too-large' ? 413 : 400, 'INVALID_ARGUMENT', err.message);
}

function fail(res: Response, code: number, status: string, message: string): void {
  res.status(code).json({ error: { code, status, message } });
}
