/**
 * The A2A routes of one agent: JSON-RPC at `/a2a/<agent>` and HTTP+JSON beside it, 1.0 and 0.3.
 *
 * Non-streaming calls and 0.3 go through the SDK's transport handlers (its wire JSON and error
 * mapping). The 1.0 streaming calls are written here, straight from the stored event bodies, because
 * the replay profile needs `id: <seq>` on every SSE event and the SDK's writer sends none.
 */
import express from 'express';
import type { NextFunction, Request, Response, Router } from 'express';
import { A2A_VERSION_HEADER, HTTP_EXTENSION_HEADER, SendMessageRequest } from '@a2a-js/sdk';
import { ServerCallContext, JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { restHandler } from '@a2a-js/sdk/server/express';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { LEGACY_HTTP_EXTENSION_HEADER } from '@a2a-js/sdk/compat/v0_3';
import {
  A2A_ERROR_CODE,
  ContentTypeNotSupportedError,
  RequestMalformedError,
  restStatusFor,
  toRestErrorBody,
} from '@a2a-js/sdk/errors';
import { META, REPLAY_EXTENSION_URI } from '../../core/batonProfile';
import { isRecord } from '../../core/isRecord';
import { STORE_RETRY_AFTER_SECONDS, StoreUnavailableError } from '../store/gatewayStore';
import { RemoteUnavailableError } from '../remoteStream';
import { isUnavailableAnswer } from '../unavailableAnswers';
import type { EventRow } from '../store/gatewayStore';
import type { GatewayRequestHandler } from '../requestHandler';
import { GatewayUser, parseCursor, setCursor, setSignal } from '../requestContext';
import type { BodyError, BodyLimits } from './jsonBody';
import { jsonBody } from './jsonBody';
import { writeSse } from './sseWriter';

type JsonRpcId = string | number | null;

function isLegacy(req: Request): boolean {
  const v = req.header(A2A_VERSION_HEADER);
  return !v || v === '0.3';
}

function parseExtensions(v: string | undefined): string[] {
  return v
    ? [
        ...new Set(
          v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
      ]
    : [];
}

function userOf(res: Response): GatewayUser {
  const u: unknown = res.locals.user;
  if (!(u instanceof GatewayUser)) throw new Error('A2A route reached without authentication');
  return u;
}

/** The call context, with what the SDK's request types cannot carry (cursor, disconnect signal). */
function buildContext(
  req: Request,
  res: Response,
  legacy: boolean,
  cursorFromBody: unknown,
): { context: ServerCallContext; abort: AbortController } {
  const extensions = parseExtensions(
    legacy
      ? (req.header(LEGACY_HTTP_EXTENSION_HEADER) ?? req.header(HTTP_EXTENSION_HEADER))
      : req.header(HTTP_EXTENSION_HEADER),
  );
  const context = new ServerCallContext({
    requestedExtensions: extensions,
    user: userOf(res),
    requestedVersion: req.header(A2A_VERSION_HEADER) || undefined,
  });
  const header = parseCursor(req.header('last-event-id'), 'Last-Event-ID');
  const inBody = parseCursor(cursorFromBody, `metadata "${META.cursor}"`);
  setCursor(context, header ?? inBody);
  if (extensions.includes(REPLAY_EXTENSION_URI)) context.addActivatedExtension(REPLAY_EXTENSION_URI);
  const abort = new AbortController();
  setSignal(context, abort.signal);
  return { context, abort };
}

/**
 * The reason a request's signal fires once the request is over (what still follows it stops): one for
 * all requests, as an AbortError like the default one, which is made anew (with its stack) on each abort.
 */
const REQUEST_OVER = new DOMException('the request is over', 'AbortError');

function extensionHeaders(context: ServerCallContext, legacy: boolean): Record<string, string> {
  const act = context.activatedExtensions;
  return act && act.length ? { [legacy ? LEGACY_HTTP_EXTENSION_HEADER : HTTP_EXTENSION_HEADER]: act.join(',') } : {};
}

/** `baton/seq` of a (v1 or v0.3) JSON-RPC stream envelope, for its SSE id. */
function seqOfEnvelope(env: unknown): number | undefined {
  const result = (env as { result?: Record<string, unknown> } | null)?.result;
  if (!result || typeof result !== 'object') return undefined;
  const direct = (result.metadata as Record<string, unknown> | undefined)?.[META.seq];
  if (typeof direct === 'number') return direct;
  for (const v of Object.values(result)) {
    const s = (v as { metadata?: Record<string, unknown> } | null)?.metadata?.[META.seq];
    if (typeof s === 'number') return s;
  }
  return undefined;
}

/** A stored row's SSE id: its seq (seq 0, an event outside any task such as a direct Message answer, has no place to resume from). */
const rowId = (r: EventRow): number | undefined => (r.seq > 0 ? r.seq : undefined);

/** The SDK's envelopes (the 0.3 and other non-streamed-from-the-store answers), one batch each. */
async function* envelopeBatches(
  stream: AsyncGenerator<unknown, void, undefined>,
): AsyncGenerator<readonly unknown[], void, undefined> {
  for await (const env of stream) yield [env];
}

/** The JSON-RPC methods of A2A 1.0; none of them is a 0.3 method (0.3's are `message/send`, `tasks/get`, …). */
const V1_METHODS: ReadonlySet<string> = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
]);

function rpcError(id: JsonRpcId, code: number, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function bodyErrorToRpc(err: BodyError, legacy: boolean): Record<string, unknown> {
  if (err.kind === 'content-type') {
    // An A2A error: with its ErrorInfo (A2A §9.5), as the SDK maps it, in the version of the request.
    const e = new ContentTypeNotSupportedError(err.message);
    const error = legacy
      ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(e)
      : JsonRpcTransportHandler.mapToJSONRPCError(e);
    return { jsonrpc: '2.0', id: null, error };
  }
  return rpcError(
    null,
    err.kind === 'parse' ? A2A_ERROR_CODE.PARSE_ERROR : A2A_ERROR_CODE.INVALID_REQUEST,
    err.message,
  );
}

function idOf(body: unknown): JsonRpcId {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

const shown = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 40));

/**
 * What makes the body not a JSON-RPC 2.0 Request object (JSON-RPC 2.0 §4), or undefined when it is
 * one: `jsonrpc` exactly "2.0", `method` a non-empty string, `id` (when present) a string, an integer
 * or null. Such a body is an Invalid Request (-32600), answered before any method runs; what is wrong
 * in `params` is the method's to say (Invalid params, -32602).
 */
export function envelopeProblem(body: unknown): string | undefined {
  const shape = 'send one JSON-RPC 2.0 request object: {"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{…}}';
  if (body === undefined) return `the request has no body; ${shape}`;
  if (Array.isArray(body)) return `batch requests are not supported; ${shape}`;
  if (body === null || typeof body !== 'object') return `the body is not a JSON-RPC request object; ${shape}`;
  const r = body as Record<string, unknown>;
  if (r.jsonrpc !== '2.0') return `"jsonrpc" must be "2.0" (got ${shown(r.jsonrpc)}); ${shape}`;
  if (typeof r.method !== 'string' || !r.method)
    return `"method" must be a non-empty string naming the A2A method (got ${shown(r.method)}); ${shape}`;
  if ('id' in r && !(typeof r.id === 'string' || Number.isInteger(r.id) || r.id === null))
    return `"id" must be a string, an integer or null (got ${shown(r.id)})`;
  return undefined;
}

/**
 * Answers a request that failed because the store was unavailable (`StoreUnavailableError`: PostgreSQL
 * restarting, stopped or refusing connections) with 503 and Retry-After, so a client or a balancer
 * knows to try again, whichever shape its route gives errors in (JSON-RPC, 1.0 or 0.3, or HTTP+JSON;
 * the SDK's handlers write most of them). Their mapping keeps an error's message, not its class: the
 * message is looked up among those of the errors this process made (src/gateway/unavailableAnswers.ts).
 */
function storeUnavailableAsRetryable(_req: Request, res: Response, next: NextFunction): void {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
    const message = typeof error?.message === 'string' ? error.message : '';
    // A remote agent behind this gateway that kept answering "not now" (429/502/503/504) is the same
    // case. Only errors this gateway made count: a remote's error passed through that merely says so
    // stays what it is.
    if (isUnavailableAnswer(message)) {
      res.status(503).setHeader('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      // The HTTP+JSON error body repeats the HTTP status and its name.
      if (error && typeof error.status === 'string') Object.assign(error, { code: 503, status: 'UNAVAILABLE' });
    }
    return json(body);
  };
  next();
}

export interface A2aRouteOptions {
  readonly handler: GatewayRequestHandler;
  readonly bodyLimits: BodyLimits;
  readonly log: (line: string) => void;
}

export function a2aRouter(o: A2aRouteOptions): Router {
  const { handler } = o;
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  const router = express.Router();
  router.use(storeUnavailableAsRetryable);
  // A2A §3.6.1: a client MAY name its version in the query (`?A2A-Version=1.0`) instead of the header.
  // The header wins when both are given; every handler below (the SDK's too) reads the header.
  router.use((req: Request, _res: Response, next: NextFunction) => {
    const q = req.query[A2A_VERSION_HEADER];
    if (!req.header(A2A_VERSION_HEADER) && typeof q === 'string' && q)
      req.headers[A2A_VERSION_HEADER.toLowerCase()] = q;
    next();
  });

  const jsonRpc = async (req: Request, res: Response): Promise<void> => {
    const body: unknown = req.body;
    const id = idOf(body);
    const useLegacy = isLegacy(req);
    const mapError = (e: unknown): { code: number; message: string } =>
      useLegacy
        ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(e)
        : JsonRpcTransportHandler.mapToJSONRPCError(e);
    const invalid = envelopeProblem(body);
    if (invalid !== undefined) {
      // JSON-RPC 2.0 §5.1: Invalid Request, with the request's id when it could be read (else null).
      res.status(200).json(rpcError(id, A2A_ERROR_CODE.INVALID_REQUEST, `Invalid Request: ${invalid}`));
      return;
    }
    const named = (body as { method: string }).method;
    if (useLegacy && V1_METHODS.has(named)) {
      const said = req.header(A2A_VERSION_HEADER)
        ? 'says A2A-Version 0.3'
        : 'names no A2A-Version, so it is read as A2A 0.3 (A2A §3.6.2)';
      res
        .status(200)
        .json(
          rpcError(
            id,
            A2A_ERROR_CODE.METHOD_NOT_FOUND,
            `Method not found: "${named}" is an A2A 1.0 method, and this request ${said}: send the header "A2A-Version: 1.0" (or ?A2A-Version=1.0 in the URL)`,
          ),
        );
      return;
    }
    let built: { context: ServerCallContext; abort: AbortController };
    try {
      const params = (body as { params?: unknown }).params;
      const md =
        params && typeof params === 'object' ? (params as { metadata?: Record<string, unknown> }).metadata : undefined;
      built = buildContext(req, res, useLegacy, md && typeof md === 'object' ? md[META.cursor] : undefined);
      validateVersion(built.context.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
    } catch (e) {
      res.status(200).json({ jsonrpc: '2.0', id, error: mapError(e) });
      return;
    }
    const { context, abort } = built;
    const rpc = body as { jsonrpc?: unknown; method?: unknown; params?: Record<string, unknown> };
    const method = rpc.jsonrpc === '2.0' && !useLegacy && typeof rpc.method === 'string' ? rpc.method : '';
    const paramsOk = rpc.params !== null && typeof rpc.params === 'object' && !Array.isArray(rpc.params);
    try {
      if ((method === 'SendStreamingMessage' || method === 'SubscribeToTask') && paramsOk) {
        const params = rpc.params as Record<string, unknown>;
        const rows =
          method === 'SendStreamingMessage'
            ? await handler.openSendStream(SendMessageRequest.fromJSON(params), context)
            : await handler.openSubscribeStream(typeof params.id === 'string' ? params.id : '', context);
        const prefix = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
        await writeSse({
          res,
          abort,
          items: rows,
          idOf: rowId,
          dataOf: (r) => (typeof r.body === 'string' ? `${prefix}${r.body}}` : [prefix, r.body, '}']),
          headers: extensionHeaders(context, false),
          errorData: (e) => JSON.stringify({ jsonrpc: '2.0', id, error: mapError(e) }),
        });
        return;
      }
      const out = await (useLegacy ? legacy : v1).handle(body as Record<string, unknown>, context);
      if (out && typeof (out as AsyncGenerator<unknown>)[Symbol.asyncIterator] === 'function') {
        await writeSse({
          res,
          abort,
          items: envelopeBatches(out as AsyncGenerator<unknown, void, undefined>),
          idOf: seqOfEnvelope,
          dataOf: (env) => JSON.stringify(env),
          headers: extensionHeaders(context, useLegacy),
          errorData: (e) => JSON.stringify({ jsonrpc: '2.0', id, error: mapError(e) }),
        });
        return;
      }
      for (const [k, v] of Object.entries(extensionHeaders(context, useLegacy))) res.setHeader(k, v);
      res.status(200).json(out);
    } catch (e) {
      if (!res.headersSent) {
        const err = mapError(e);
        res.status(err.code === A2A_ERROR_CODE.INTERNAL_ERROR ? 500 : 200).json({ jsonrpc: '2.0', id, error: err });
      } else if (!res.writableEnded) res.end();
      // An unavailable store is logged once per outage, by the store; an unavailable remote, by its runner.
      if (
        !(e instanceof Error) ||
        !('code' in e || e instanceof StoreUnavailableError || e instanceof RemoteUnavailableError)
      )
        o.log(`JSON-RPC ${method || '(legacy)'} failed: ${(e as Error).stack ?? String(e)}`);
    } finally {
      abort.abort(REQUEST_OVER);
    }
  };

  router.post(
    '/',
    ...jsonBody(
      o.bodyLimits,
      (err, req, res) =>
        void res
          .status(err.kind === 'too-large' ? 413 : err.kind === 'timeout' ? 408 : 200)
          .json(bodyErrorToRpc(err, isLegacy(req))),
    ),
    (req, res) => {
      void jsonRpc(req, res);
    },
  );

  // HTTP+JSON: the same body checks, errors in the REST shape.
  const restBody = jsonBody(o.bodyLimits, (err, _req, res) => {
    const status =
      err.kind === 'too-large' ? 413 : err.kind === 'timeout' ? 408 : err.kind === 'content-type' ? 415 : 400;
    // A Content-Type (or Content-Encoding) refused is the A2A ContentTypeNotSupported error, as on the JSON-RPC route.
    const error =
      err.kind === 'content-type'
        ? new ContentTypeNotSupportedError(err.message)
        : new RequestMalformedError(err.message);
    res.status(status).json(toRestErrorBody(error, status));
  });
  router.use(...restBody);
  // A2A §11.1: the HTTP+JSON binding answers with Content-Type application/json (the SDK's handler says application/a2a+json).
  router.use((_req: Request, res: Response, next: NextFunction) => {
    const setHeader = res.setHeader.bind(res);
    res.setHeader = (name: string, value: number | string | readonly string[]) =>
      setHeader(
        name,
        name.toLowerCase() === 'content-type' && typeof value === 'string'
          ? value.replace(/^application\/a2a\+json/i, 'application/json')
          : value,
      );
    next();
  });

  const restStream =
    (
      open: (req: Request, context: ServerCallContext) => Promise<AsyncGenerator<readonly EventRow[], void, undefined>>,
    ) =>
    async (req: Request, res: Response, next: NextFunction): Promise<void> => {
      if (isLegacy(req)) return next(); // 0.3 REST is the SDK's legacy router's
      let abort: AbortController | undefined;
      try {
        const md = (req.body as { metadata?: Record<string, unknown> } | undefined)?.metadata;
        const built = buildContext(req, res, false, md && typeof md === 'object' ? md[META.cursor] : undefined);
        abort = built.abort;
        validateVersion(built.context.requestedVersion, await handler.getAgentCard(), 'HTTP+JSON');
        const rows = await open(req, built.context);
        await writeSse({
          res,
          abort: built.abort,
          items: rows,
          idOf: rowId,
          dataOf: (r) => (typeof r.body === 'string' ? r.body : [r.body]),
          headers: extensionHeaders(built.context, false),
          errorData: (e) => JSON.stringify(toRestErrorBody(e, restStatusFor(e))),
        });
      } catch (e) {
        if (!res.headersSent) {
          const status = restStatusFor(e);
          res.status(status).json(toRestErrorBody(e, status));
        } else if (!res.writableEnded) res.end();
      } finally {
        abort?.abort(REQUEST_OVER);
      }
    };
  const send = restStream((req, context) =>
    handler.openSendStream(SendMessageRequest.fromJSON(req.body ?? {}), context),
  );
  const subscribe = restStream((req, context) => handler.openSubscribeStream(String(req.params.taskId ?? ''), context));
  for (const prefix of ['', '/:tenant']) {
    router.post(`${prefix}/message\\:stream`, (req, res, next) => void send(req, res, next));
    router.get(`${prefix}/tasks/:taskId\\:subscribe`, (req, res, next) => void subscribe(req, res, next));
    router.post(`${prefix}/tasks/:taskId\\:subscribe`, (req, res, next) => void subscribe(req, res, next));
  }
  router.use(
    restHandler({
      requestHandler: handler,
      userBuilder: (req) => Promise.resolve(userOf(req.res as Response)),
      legacyCompat: { enabled: true },
    }),
  );
  // What no A2A method answers: said as such (the agent exists), in the HTTP+JSON error shape.
  router.use((req: Request, res: Response) => {
    const base = req.baseUrl;
    const methods = `JSON-RPC is POST ${base}; HTTP+JSON is POST ${base}/message:send or /message:stream, GET ${base}/tasks, GET ${base}/tasks/<id>, POST ${base}/tasks/<id>:cancel, GET ${base}/tasks/<id>:subscribe and ${base}/tasks/<id>/pushNotificationConfigs`;
    const path = req.path === '/' ? base : `${base}${req.path}`;
    res.status(404).json({
      error: { code: 404, status: 'NOT_FOUND', message: `${req.method} ${path} is not an A2A method: ${methods}` },
    });
  });
  return router;
}
