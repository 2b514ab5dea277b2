// The parts of the shared guards the gateway's callers needed: the strict capability reader, the chain
// reader, and the chain check with the proxy's limits.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkDelegationChain,
  READ_ONLY,
  readChain,
  readRequestedCapabilities,
} from '../../../src/core/delegation/guards';

describe('guards: what the gateway reads from a request', () => {
  it('reads requested capabilities strictly: none is read-only, a left-out one is not asked for', () => {
    assert.deepEqual(readRequestedCapabilities(undefined), { ok: true, capabilities: READ_ONLY });
    assert.deepEqual(readRequestedCapabilities(null), { ok: true, capabilities: READ_ONLY });
    assert.deepEqual(readRequestedCapabilities({ write: true }), {
      ok: true,
      capabilities: { write: true, shell: false, network: false },
    });
    assert.ok(Object.isFrozen(READ_ONLY));
  });

  it('refuses malformed capabilities, naming the first bad one and what to send', () => {
    const reason = (v: unknown) => {
      const r = readRequestedCapabilities(v);
      return r.ok ? 'accepted' : r.reason;
    };
    assert.match(reason('write'), /^metadata "baton\/capabilities" must be an object like \{"write": false/);
    assert.match(reason([true]), /must be an object/);
    assert.equal(reason({ write: 'yes', shell: 1 }), 'metadata "baton/capabilities".write must be true or false');
    assert.equal(reason({ network: null }), 'metadata "baton/capabilities".network must be true or false');
  });

  it("reads a chain's string entries in order; anything but a list is empty", () => {
    assert.deepEqual(readChain({ 'baton/chain': ['a', 1, 'b', null] }), ['a', 'b']);
    assert.deepEqual(readChain({ 'baton/chain': 'a' }), []);
    assert.deepEqual(readChain(undefined), []);
  });

  it('with no breadth limit, only depth and cycles refuse', () => {
    const limits = { maxDepth: 3, maxBreadth: Number.POSITIVE_INFINITY };
    assert.deepEqual(checkDelegationChain(['a', 'b'], 'c', 1_000, limits), { ok: true, chain: ['a', 'b', 'c'] });
    const deep = checkDelegationChain(['a', 'b', 'c'], 'd', 0, limits);
    assert.equal(deep.ok === false && deep.code, 'depth');
  });
});
