import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migratePanelState, parseWebviewMessage, PANEL_STATE_VERSION } from '../../src/core/protocol/panelProtocol';

describe('panel protocol: messages from the webview are validated', () => {
  it('accepts the messages the panel sends', () => {
    assert.deepEqual(parseWebviewMessage({ type: 'ready', stateVersion: 1 }), {
      ok: true,
      value: { type: 'ready', stateVersion: 1 },
    });
    assert.deepEqual(parseWebviewMessage({ type: 'request', id: 3, method: 'refresh', params: {} }), {
      ok: true,
      value: { type: 'request', id: 3, method: 'refresh', params: {} },
    });
    assert.deepEqual(
      parseWebviewMessage({ type: 'request', id: 4, method: 'runCommand', params: { command: 'baton.delegate' } }),
      {
        ok: true,
        value: { type: 'request', id: 4, method: 'runCommand', params: { command: 'baton.delegate' } },
      },
    );
    assert.deepEqual(
      parseWebviewMessage({ type: 'request', id: 5, method: 'reviewSelectAll', params: { selected: false } }),
      {
        ok: true,
        value: { type: 'request', id: 5, method: 'reviewSelectAll', params: { selected: false } },
      },
    );
    assert.deepEqual(parseWebviewMessage({ type: 'request', id: 5, method: 'showFullText', params: { seq: 7 } }), {
      ok: true,
      value: { type: 'request', id: 5, method: 'showFullText', params: { seq: 7 } },
    });
    assert.deepEqual(parseWebviewMessage({ type: 'request', id: 6, method: 'showFullText', params: {} }), {
      ok: true,
      value: { type: 'request', id: 6, method: 'showFullText', params: {} },
    });
  });

  const refused: [string, unknown][] = [
    ['null', null],
    ['a string', 'ready'],
    ['an array', [{ type: 'ready' }]],
    ['an unknown type', { type: 'eval', code: '1' }],
    ['ready without a version', { type: 'ready' }],
    ['ready with extra fields', { type: 'ready', stateVersion: 1, html: '<img>' }],
    ['a fractional id', { type: 'request', id: 1.5, method: 'refresh', params: {} }],
    ['a negative id', { type: 'request', id: -1, method: 'refresh', params: {} }],
    ['an unknown method', { type: 'request', id: 1, method: 'applyPatch', params: {} }],
    ['params that are not an object', { type: 'request', id: 1, method: 'refresh', params: [] }],
    ['refresh with params', { type: 'request', id: 1, method: 'refresh', params: { x: 1 } }],
    ['showFullText with a fractional seq', { type: 'request', id: 1, method: 'showFullText', params: { seq: 1.5 } }],
    ['showFullText with a string seq', { type: 'request', id: 1, method: 'showFullText', params: { seq: '1' } }],
    [
      'showFullText with extra params',
      { type: 'request', id: 1, method: 'showFullText', params: { seq: 1, path: '/etc/passwd' } },
    ],
    [
      'a command outside the allow-list',
      { type: 'request', id: 1, method: 'runCommand', params: { command: 'workbench.action.terminal.new' } },
    ],
    [
      'a command with extra params',
      { type: 'request', id: 1, method: 'runCommand', params: { command: 'baton.delegate', args: ['x'] } },
    ],
    [
      'select-all without a boolean',
      { type: 'request', id: 1, method: 'reviewSelectAll', params: { selected: 'yes' } },
    ],
    [
      'select-all with extra params',
      { type: 'request', id: 1, method: 'reviewSelectAll', params: { selected: true, files: ['a'] } },
    ],
    [
      'a prototype-polluting key',
      JSON.parse('{"type":"request","id":1,"method":"refresh","params":{"__proto__":{"x":1}}}'),
    ],
  ];
  for (const [name, raw] of refused) {
    it(`refuses ${name}`, () => {
      const r = parseWebviewMessage(raw);
      assert.equal(r.ok, false);
      assert.ok(!r.ok && r.error.length > 0);
    });
  }
});

describe('panel state migration', () => {
  it('keeps state of the current version and drops anything else', () => {
    assert.deepEqual(migratePanelState({ __v: PANEL_STATE_VERSION, delegationId: 'd1', timelineExpanded: false }), {
      __v: PANEL_STATE_VERSION,
      delegationId: 'd1',
      timelineExpanded: false,
    });
    assert.deepEqual(migratePanelState({ __v: 0, delegationId: 'd1' }), {
      __v: PANEL_STATE_VERSION,
      timelineExpanded: true,
    });
    assert.deepEqual(migratePanelState('garbage'), { __v: PANEL_STATE_VERSION, timelineExpanded: true });
  });
});
