import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_HEAP_GROWING_PERCENT, heapGrowingPercent } from '../../../src/gateway/heapGrowth';

describe('gateway heap growth: the V8 setting baton-gateway applies at start', () => {
  it('applies the default when nothing else is said', () => {
    assert.deepEqual(heapGrowingPercent({}, []), { percent: DEFAULT_HEAP_GROWING_PERCENT });
    assert.deepEqual(heapGrowingPercent({ BATON_GATEWAY_HEAP_GROWING_PERCENT: ' ' }, []), {
      percent: DEFAULT_HEAP_GROWING_PERCENT,
    });
  });

  it('takes the percent from BATON_GATEWAY_HEAP_GROWING_PERCENT; 0 leaves V8 alone', () => {
    assert.deepEqual(heapGrowingPercent({ BATON_GATEWAY_HEAP_GROWING_PERCENT: '120' }, []), { percent: 120 });
    assert.equal(heapGrowingPercent({ BATON_GATEWAY_HEAP_GROWING_PERCENT: '0' }, []), undefined);
  });

  it('says what is wrong with a value it cannot use', () => {
    for (const bad of ['fast', '-5', '1.5', '301']) {
      const r = heapGrowingPercent({ BATON_GATEWAY_HEAP_GROWING_PERCENT: bad }, []);
      assert.ok(r && 'error' in r, bad);
      assert.match(
        r.error,
        new RegExp(`BATON_GATEWAY_HEAP_GROWING_PERCENT=${bad.replace('.', '\\.')} is not a whole number from 0 to 300`),
      );
    }
  });

  it('leaves a --heap-growing-percent the process was started with alone (node flags or NODE_OPTIONS)', () => {
    assert.equal(heapGrowingPercent({}, ['--heap-growing-percent=80']), undefined);
    assert.equal(heapGrowingPercent({}, ['--heap_growing_percent=80']), undefined);
    assert.equal(heapGrowingPercent({ NODE_OPTIONS: '--enable-source-maps --heap-growing-percent=10' }, []), undefined);
    assert.equal(
      heapGrowingPercent({ NODE_OPTIONS: '--heap-growing-percent=10', BATON_GATEWAY_HEAP_GROWING_PERCENT: '70' }, []),
      undefined,
    );
    // Other heap flags are no reason to leave the growth factor alone.
    assert.deepEqual(heapGrowingPercent({}, ['--max-old-space-size=4096']), { percent: DEFAULT_HEAP_GROWING_PERCENT });
  });
});
