// One table says how a delegation state looks in the Delegations view and in the panel.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DELEGATION_OUTCOMES, isFinalOutcome } from '../../src/core/delegation';
import { STATE_LOOKS, stateLabel, stateLook } from '../../src/core/protocol/delegationStates';
import { english } from '../../src/core/protocol/l10n';

describe('delegation states', () => {
  it('an outcome state is final exactly when nothing more happens to the delegation', () => {
    for (const o of DELEGATION_OUTCOMES) assert.equal(STATE_LOOKS[o].final, isFinalOutcome(o), o);
    for (const s of ['queued', 'starting', 'reconnecting', 'canceling', 'submitted', 'working'] as const)
      assert.equal(STATE_LOOKS[s].final, false, s);
  });

  it('says a state through the translate function it is given, and an unknown state as it is', () => {
    assert.equal(stateLabel('input-required', english), 'Needs your input');
    assert.equal(
      stateLabel('completed', (m) => `«${m}»`),
      '«Completed»',
    );
    assert.equal(stateLabel('paused-by-a-newer-version', english), 'paused-by-a-newer-version');
    assert.deepEqual(stateLook('paused-by-a-newer-version'), STATE_LOOKS.unknown);
  });

  it('only states that last while the agent works turn', () => {
    const spinning = Object.entries(STATE_LOOKS)
      .filter(([, l]) => l.spin)
      .map(([s]) => s)
      .sort();
    assert.deepEqual(spinning, ['canceling', 'reconnecting', 'starting', 'submitted', 'working']);
  });
});
