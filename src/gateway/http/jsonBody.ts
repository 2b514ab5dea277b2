/**
 * Request bodies, read once and checked before anything else touches them: a size cap, JSON syntax,
 * nesting depth (`JSON.parse` accepts a million levels; `JSON.stringify` and `structuredClone` then
 * overflow the stack) and lone surrogates (which no JSON canonicalisation, digest or signature can
 * represent). Each failure is a `BodyError` that the route answers in its own wire format.
 */
import express from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { loneSurrogateAt } from '../../core/jcs';

export type BodyErrorKind = 'too-large' | 'parse' | 'invalid' | 'content-type';

export class BodyError extends Error {
  constructor(
    readonly kind: BodyErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'BodyError';
  }
}

export const MAX_DEPTH = 64;

/** Depth and string checks without recursion (the value may be a million levels deep). */
export function checkJsonValue(root: unknown): void {
  const stack: Array<{ v: unknown; d: number }> = [{ v: root, d: 0 }];
  while (stack.length) {
    const { v, d } = stack.pop() as { v: unknown; d: number };
    if (typeof v === 'string') {
      if (loneSurrogateAt(v) >= 0) throw new BodyError('invalid', 'the request contains a string with a lone UTF-16 surrogate; send well-formed Unicode');
    } else if (v !== null && typeof v === 'object') {
      if (d >= MAX_DEPTH) throw new BodyError('invalid', `the request is nested deeper than ${MAX_DEPTH} levels`);
      if (Array.isArray(v)) {
        for (const x of v) stack.push({ v: x, d: d + 1 });
      } else {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          if (loneSurrogateAt(k) >= 0) throw new BodyError('invalid', 'the request contains a member name with a lone UTF-16 surrogate; send well-formed Unicode');
          stack.push({ v: x, d: d + 1 });
        }
      }
    }
  }
}

export function parseJsonBody(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new BodyError('parse', `the request body is not JSON: ${(e as Error).message}`);
  }
  checkJsonValue(value);
  return value;
}

const JSON_TYPES = new Set(['application/json', 'application/a2a+json']);

/**
 * Reads and checks the body of a POST/PUT (GET has none). The parsed value lands in `req.body`; the
 * request stream is then consumed, so the SDK's own `express.json()` (100 KB limit) skips it.
 */
export function jsonBody(maxBytes: number, onError: (err: BodyError, req: Request, res: Response) => void): RequestHandler[] {
  const raw = express.raw({ type: () => true, limit: maxBytes });
  return [
    (req: Request, res: Response, next: NextFunction): void => {
      if (req.method !== 'POST' && req.method !== 'PUT') return next();
      const ct = req.header('content-type');
      if (ct) {
        const media = ct.split(';', 1)[0].trim().toLowerCase();
        if (!JSON_TYPES.has(media)) return onError(new BodyError('content-type', `Content-Type ${JSON.stringify(ct)} is not supported; send application/json`), req, res);
      }
      raw(req, res, (err?: unknown) => {
        if (err) {
          const e = err as { type?: string; message?: string };
          if (e.type === 'entity.too.large') return onError(new BodyError('too-large', `the request body exceeds ${maxBytes} bytes`), req, res);
          return onError(new BodyError('parse', `the request body could not be read: ${e.message ?? String(err)}`), req, res);
        }
        const buf = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        if (buf.length === 0) {
          req.body = undefined;
          return next();
        }
        try {
          req.body = parseJsonBody(buf);
        } catch (e2) {
          return onError(e2 instanceof BodyError ? e2 : new BodyError('parse', String(e2)), req, res);
        }
        next();
      });
    },
  ];
}
