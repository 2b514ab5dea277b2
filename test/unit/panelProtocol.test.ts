import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dispatchPanelRequest,
  migratePanelState,
  PANEL_REQUEST_KIND,
  PANEL_STATE_VERSION,
  panelStateFields,
  panelSubjectOf,
  parseWebviewMessage,
  routePanelRequest,
  sameSubject,
  type AgentReviewRequests,
  type PanelHandlers,
  type PanelRequestMessage,
  type PanelRequests,
  type PanelSubject,
} from '../../src/core/protocol/panelProtocol';

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
      'a tool-call answer the extension does not define',
      { type: 'request', id: 1, method: 'answerToolCall', params: { callId: 'c1', outcome: 'run_everything' } },
    ],
    [
      'a tool-call answer without a call id',
      { type: 'request', id: 1, method: 'answerToolCall', params: { outcome: 'cancel' } },
    ],
    ['finish with params', { type: 'request', id: 1, method: 'finish', params: { callId: 'c1' } }],
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

/** Valid params for every request a panel can send. */
const SAMPLE_PARAMS: { [M in keyof PanelRequests]: PanelRequests[M]['params'] } = {
  refresh: {},
  runCommand: { command: 'baton.addAgent' },
  cancel: {},
  reply: { text: 'use tabs' },
  answerToolCall: { callId: 'replace-1', outcome: 'proceed_once' },
  finish: {},
  reviewChanges: {},
  checkAgain: {},
  provideToken: {},
  delegateAgain: {},
  showFullText: { seq: 2 },
  openChild: { childId: 'd2' },
  reviewSelect: { fileId: 'f1', hunkId: 'h1', selected: true },
  reviewSelectAll: { selected: true },
  reviewOverride: { riskId: 'r1', allow: true },
  reviewApply: { threeWay: false },
  reviewReject: {},
  reviewUndo: {},
  reviewMerge: { action: 'abort' },
  reviewOpen: { fileId: 'f1' },
  approveAgent: { digest: 'sha256:aa', endpointUrl: 'https://a.example/a2a', acknowledgeOffOrigin: false },
  rejectAgent: {},
};
const METHODS = Object.keys(PANEL_REQUEST_KIND) as (keyof PanelRequests)[];

const OVERVIEW: PanelSubject = { kind: 'overview' };
const DELEGATION: PanelSubject = { kind: 'delegation', delegationId: 'd1' };
const AGENT: PanelSubject = { kind: 'agentReview', agentId: 'https://a.example/card' };

function message(method: keyof PanelRequests): PanelRequestMessage {
  const parsed = parseWebviewMessage({ type: 'request', id: 9, method, params: SAMPLE_PARAMS[method] });
  assert.ok(parsed.ok && parsed.value.type === 'request', `${method} did not parse`);
  return parsed.value;
}

describe('panel subject: what a panel shows, saved with its state', () => {
  it('every kind of subject survives being saved and restored', () => {
    for (const subject of [OVERVIEW, DELEGATION, AGENT]) {
      const saved = migratePanelState({
        __v: PANEL_STATE_VERSION,
        timelineExpanded: true,
        ...panelStateFields(subject),
      });
      assert.deepEqual(panelSubjectOf(saved), subject);
    }
  });

  it('reads the state panels saved before the subject had a kind', () => {
    assert.deepEqual(panelSubjectOf(migratePanelState({ __v: 1, delegationId: 'd1', timelineExpanded: true })), {
      kind: 'delegation',
      delegationId: 'd1',
    });
    assert.deepEqual(panelSubjectOf(migratePanelState({ __v: 1, agentCardUrl: 'https://a.example/card' })), {
      kind: 'agentReview',
      agentId: 'https://a.example/card',
    });
    assert.deepEqual(panelSubjectOf(migratePanelState({ __v: 1, timelineExpanded: false })), OVERVIEW);
    assert.deepEqual(panelSubjectOf(migratePanelState({ __v: 1, delegationId: 42 })), OVERVIEW);
  });

  it('tells subjects apart by kind and id', () => {
    assert.ok(sameSubject(DELEGATION, { kind: 'delegation', delegationId: 'd1' }));
    assert.ok(!sameSubject(DELEGATION, { kind: 'delegation', delegationId: 'd2' }));
    assert.ok(!sameSubject(DELEGATION, OVERVIEW));
    assert.ok(!sameSubject(AGENT, { kind: 'agentReview', agentId: 'https://b.example/card' }));
    assert.ok(sameSubject(OVERVIEW, { kind: 'overview' }));
  });
});

describe('panel requests per kind of panel', () => {
  it('parses every request of every kind', () => {
    for (const method of METHODS) assert.equal(message(method).method, method);
  });

  it('lets each panel make the common requests and those of its own kind', () => {
    for (const subject of [OVERVIEW, DELEGATION, AGENT]) {
      for (const method of METHODS) {
        const kind = PANEL_REQUEST_KIND[method];
        const routed = routePanelRequest(subject, message(method));
        assert.equal(routed.ok, kind === 'any' || kind === subject.kind, `${method} on ${subject.kind}`);
        if (routed.ok) assert.equal(routed.value.kind, kind);
      }
    }
  });

  it('refuses a request sent to a panel of the wrong kind, saying which panel it belongs to', () => {
    const onOverview = routePanelRequest(OVERVIEW, message('cancel'));
    assert.ok(!onOverview.ok);
    assert.match(onOverview.error, /^cancel is a request for a delegation's panel, and this panel shows the overview/);
    const onDelegation = routePanelRequest(DELEGATION, message('approveAgent'));
    assert.ok(!onDelegation.ok);
    assert.match(
      onDelegation.error,
      /approveAgent is a request for an agent review's panel, and this panel shows a delegation/,
    );
    const onAgent = routePanelRequest(AGENT, message('reviewApply'));
    assert.ok(!onAgent.ok);
    assert.match(
      onAgent.error,
      /reviewApply is a request for a delegation's panel, and this panel shows an agent review/,
    );
  });

  it('carries the panel subject to the handler of the request, which answers with its result', async () => {
    const calls: string[] = [];
    const agentReview: PanelHandlers['agentReview'] = {
      approveAgent: async (subject, p) => {
        calls.push(`approve ${subject.agentId} ${p.digest}`);
        return { approved: true };
      },
      rejectAgent: async (subject) => {
        calls.push(`reject ${subject.agentId}`);
        return { ok: true };
      },
    };
    const routed = routePanelRequest(AGENT, message('approveAgent'));
    assert.ok(routed.ok && routed.value.kind === 'agentReview');
    const result = await dispatchPanelRequest(agentReview, routed.value.subject, routed.value.message);
    assert.deepEqual(result, { approved: true });
    assert.deepEqual(calls, ['approve https://a.example/card sha256:aa']);
  });

  it('types a request message by the requests of its kind', () => {
    const ok: PanelRequestMessage<AgentReviewRequests> = { type: 'request', id: 1, method: 'rejectAgent', params: {} };
    // @ts-expect-error cancel is a delegation's request, not an agent review's
    const wrong: PanelRequestMessage<AgentReviewRequests> = { type: 'request', id: 1, method: 'cancel', params: {} };
    assert.notEqual(ok.method, wrong.method);
  });
});
