import type * as Net from './net';

let net: typeof Net | undefined;

/** Loads dist/net.js (see net.ts) the first time Baton fetches anything. */
export function loadNet(): typeof Net {
  // A plain require of the sibling bundle: esbuild leaves it external (scripts/build.mjs).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  net ??= require('./net.js') as typeof Net;
  return net;
}
