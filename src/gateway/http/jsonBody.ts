/**
 * Request bodies, read once and checked before anything else touches them: a size cap, time limits
 * (a body that stops arriving, or takes too long in all, is answered and its connection closed), JSON
 * syntax, nesting depth (`JSON.parse` accepts a million levels; `JSON.stringify` and
 * `structuredClone` then overflow the stack), how many members and items it holds, and lone
 * surrogates (which no JSON canonicalisation, digest or signature can represent). Each failure is a
 * `BodyError` that the route answers in its own wire format.
 *
 * Depth and members are counted by a streaming pre-scan as the chunks arrive, before `JSON.parse`:
 * the scan is linear and runs a chunk (at most 64 KiB) at a time between other clients' I/O, and a
 * body that holds hundreds of thousands of members is refused after its first few kilobytes
 * instead of being parsed and walked in one go while every other client waits.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { loneSurrogateAt } from '../../core/jcs';

export type BodyErrorKind = 'too-large' | 'parse' | 'invalid' | 'content-type' | 'timeout';

export class BodyError extends Error {
  constructor(
    readonly kind: BodyErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'BodyError';
  }
}

/** What one request body may be. docs/gateway.md ("Request limits") lists them with their defaults. */
export interface BodyLimits {
  readonly maxBytes: number;
  /** Levels of nested objects and arrays. */
  readonly maxDepth: number;
  /** Object members plus array items in the whole body, counted together. */
  readonly maxMembers: number;
  /** Longest pause between two chunks of the body. */
  readonly idleMs: number;
  /** Longest time for the whole body, from when its headers were read. */
  readonly totalMs: number;
}

export const MAX_DEPTH = 64;

export const DEFAULT_BODY_LIMITS: BodyLimits = {
  maxBytes: 8 * 1024 * 1024,
  maxDepth: MAX_DEPTH,
  maxMembers: 10_000,
  idleMs: 10_000,
  totalMs: 60_000,
};

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`;

/**
 * Counts nesting and members of JSON text fed in chunks, without building anything. Counts too many
 * rather than too few for text that is not JSON (JSON.parse refuses that afterwards anyway). Works on
 * UTF-8 bytes: every byte of a multi-byte character is >= 0x80, so none is mistaken for `"`, `\`,
 * a bracket or a comma.
 */
export class JsonShapeScanner {
  private depth = 0;
  private members = 0;
  private inString = false;
  private escaped = false;
  /** Just after `[` or `{`: the next token, unless it closes the container, is its first member. */
  private opened = false;

  constructor(private readonly limits: Pick<BodyLimits, 'maxDepth' | 'maxMembers'>) {}

  feed(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c) this.escaped = true;
        else if (b === 0x22) this.inString = false;
        continue;
      }
      if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
      if (this.opened) {
        this.opened = false;
        if (b !== 0x5d && b !== 0x7d) this.member();
      }
      if (b === 0x22) {
        this.inString = true;
      } else if (b === 0x5b || b === 0x7b) {
        if (++this.depth > this.limits.maxDepth)
          throw new BodyError('invalid', `the request is nested deeper than ${this.limits.maxDepth} levels`);
        this.opened = true;
      } else if (b === 0x5d || b === 0x7d) {
        if (this.depth > 0) this.depth--;
      } else if (b === 0x2c) {
        this.member();
      }
    }
  }

  private member(): void {
    if (++this.members > this.limits.maxMembers) {
      throw new BodyError(
        'too-large',
        `the request has more than ${this.limits.maxMembers} JSON members and array items (the gateway's limit); send fewer parts or less metadata`,
      );
    }
  }
}

/** Depth and string checks without recursion (the value may be a million levels deep). */
export function checkJsonValue(root: unknown, maxDepth: number = MAX_DEPTH): void {
  const stack: Array<{ v: unknown; d: number }> = [{ v: root, d: 0 }];
  while (stack.length) {
    const { v, d } = stack.pop() as { v: unknown; d: number };
    if (typeof v === 'string') {
      if (loneSurrogateAt(v) >= 0)
        throw new BodyError(
          'invalid',
          'the request contains a string with a lone UTF-16 surrogate; send well-formed Unicode',
        );
    } else if (v !== null && typeof v === 'object') {
      if (d >= maxDepth) throw new BodyError('invalid', `the request is nested deeper than ${maxDepth} levels`);
      if (Array.isArray(v)) {
        for (const x of v) stack.push({ v: x, d: d + 1 });
      } else {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          if (loneSurrogateAt(k) >= 0)
            throw new BodyError(
              'invalid',
              'the request contains a member name with a lone UTF-16 surrogate; send well-formed Unicode',
            );
          stack.push({ v: x, d: d + 1 });
        }
      }
    }
  }
}

/** Parses a whole body within `limits` (the shape is scanned first, so JSON.parse only sees bounded work). */
export function parseJsonBody(
  buf: Buffer,
  limits: Pick<BodyLimits, 'maxDepth' | 'maxMembers'> = DEFAULT_BODY_LIMITS,
): unknown {
  new JsonShapeScanner(limits).feed(buf);
  return parseScanned(buf, limits.maxDepth);
}

/** JSON.parse and the value checks, for a body whose shape was already scanned. */
function parseScanned(buf: Buffer, maxDepth: number): unknown {
  const text = buf.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new BodyError('parse', `the request body is not JSON: ${(e as Error).message}`);
  }
  checkJsonValue(value, maxDepth);
  return value;
}

/**
 * Reads a body within the size and time limits, scanning its shape chunk by chunk. Calls `done`
 * exactly once: with the bytes, or with the limit that was hit.
 */
function readBody(req: Request, limits: BodyLimits, done: (err: BodyError | undefined, buf?: Buffer) => void): void {
  const declared = Number(req.header('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxBytes)
    return done(new BodyError('too-large', `the request body exceeds ${limits.maxBytes} bytes`));
  const chunks: Buffer[] = [];
  const scanner = new JsonShapeScanner(limits);
  let bytes = 0;
  let settled = false;
  const finish = (err: BodyError | undefined): void => {
    if (settled) return;
    settled = true;
    clearTimeout(idle);
    clearTimeout(total);
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('aborted', onAborted);
    if (err) {
      // Nothing more of this body is wanted: stop buffering it (the connection is closed after the answer).
      req.pause();
      done(err);
    } else done(undefined, Buffer.concat(chunks, bytes));
  };
  const idleTimeout = () =>
    finish(
      new BodyError(
        'timeout',
        `the request body stopped arriving: no data for ${seconds(limits.idleMs)} (the gateway's body idle limit); send the whole body without pausing`,
      ),
    );
  let idle = setTimeout(idleTimeout, limits.idleMs);
  const total = setTimeout(
    () =>
      finish(
        new BodyError(
          'timeout',
          `the request body took longer than ${seconds(limits.totalMs)} (the gateway's limit for a whole body); send it faster or send less`,
        ),
      ),
    limits.totalMs,
  );
  const onData = (chunk: Buffer): void => {
    clearTimeout(idle);
    idle = setTimeout(idleTimeout, limits.idleMs);
    bytes += chunk.length;
    if (bytes > limits.maxBytes)
      return finish(new BodyError('too-large', `the request body exceeds ${limits.maxBytes} bytes`));
    try {
      scanner.feed(chunk);
    } catch (e) {
      return finish(e instanceof BodyError ? e : new BodyError('parse', String(e)));
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => finish(undefined);
  const onError = (e: Error): void =>
    finish(new BodyError('parse', `the request body could not be read: ${e.message}`));
  const onAborted = (): void =>
    finish(new BodyError('parse', 'the client closed the connection before the body was complete'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('aborted', onAborted);
}

const JSON_TYPES = new Set(['application/json', 'application/a2a+json']);

/**
 * Reads and checks the body of a POST/PUT (GET has none). The parsed value lands in `req.body`; the
 * request stream is then consumed, so the SDK's own `express.json()` (100 KB limit) skips it. A body
 * refused half-way (too large, too slow, too many members) is answered with `Connection: close`: the
 * rest of it is never read.
 */
export function jsonBody(
  limits: BodyLimits,
  onError: (err: BodyError, req: Request, res: Response) => void,
): RequestHandler[] {
  return [
    (req: Request, res: Response, next: NextFunction): void => {
      if (req.method !== 'POST' && req.method !== 'PUT') return next();
      const ct = req.header('content-type');
      if (ct) {
        const media = ct.split(';', 1)[0].trim().toLowerCase();
        if (!JSON_TYPES.has(media))
          return onError(
            new BodyError('content-type', `Content-Type ${JSON.stringify(ct)} is not supported; send application/json`),
            req,
            res,
          );
      }
      const encoding = (req.header('content-encoding') ?? 'identity').trim().toLowerCase();
      if (encoding !== 'identity')
        return onError(
          new BodyError(
            'content-type',
            `Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body uncompressed`,
          ),
          req,
          res,
        );
      readBody(req, limits, (err, buf) => {
        if (err) {
          if (!res.headersSent) res.setHeader('Connection', 'close');
          return onError(err, req, res);
        }
        // Marks the stream as read for the body parsers further down (express.json() skips a read body).
        (req as Request & { _body?: boolean })._body = true;
        if (!buf || buf.length === 0) {
          req.body = undefined;
          return next();
        }
        try {
          req.body = parseScanned(buf, limits.maxDepth);
        } catch (e2) {
          return onError(e2 instanceof BodyError ? e2 : new BodyError('parse', String(e2)), req, res);
        }
        next();
      });
    },
  ];
}
