/** Shared pieces for the fetch tests: stand-in name resolvers, and the check that a fetch was refused with a given code. */
import * as assert from 'node:assert/strict';
import { SafeFetchError } from '../../../src/node/safeFetch';
import type { Resolver, SafeFetchErrorCode } from '../../../src/node/safeFetch';

/** A resolver that answers these addresses for any name (none: an empty answer). */
export function resolvesTo(...addresses: string[]): Resolver {
  return async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
}

/** A resolver that fails as getaddrinfo does for a name that does not exist. */
export function unresolvable(host: string): Resolver {
  return async () => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
}

/** Waits for `p` to fail with a SafeFetchError of `code` (and a message matching `message`), and returns the error. */
export async function refused(
  p: Promise<unknown>,
  code: SafeFetchErrorCode,
  message?: RegExp,
): Promise<SafeFetchError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof SafeFetchError, `expected SafeFetchError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return e;
  }
  assert.fail(`expected ${code}, but the fetch went through`);
}
