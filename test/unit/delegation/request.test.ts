// One builder for a delegation's request (src/core/delegation/request.ts): its defaults, and the
// `baton` CLI and the extension producing the same request for the same input.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { META } from '../../../src/core/batonProfile';
import type { DelegationRequest } from '../../../src/core/delegation';
import { READ_ONLY } from '../../../src/core/delegation/guards';
import { buildDelegationRequest, TITLE_LENGTH } from '../../../src/core/delegation/request';
import { extensionDelegationRequest } from '../../../src/extension/delegate/delegationRequest';
import { cliDelegationRequest } from '../../../src/gateway/batonCli';

const agent: DelegationRequest['agent'] = {
  id: 'formatter',
  name: 'Formatter',
  endpoint: 'http://127.0.0.1:4100/a2a/formatter',
  protocolBinding: 'JSONRPC',
  protocolVersion: '1.0',
};
const repository = { root: '/repo', baseCommit: 'abc123', uncommittedDigest: 'sha256:00' };
const ids = { requestId: '6f1c1a3e-1111-4222-8333-944455556666', createdAt: 1_700_000_000_000, who: 'dev' };
const longTask = `${'x'.repeat(250)}\nand a second line`;

describe('delegation request builder', () => {
  it('is read-only unless asked, titled by the first line of the task (at most TITLE_LENGTH), chained from its agent', () => {
    const r = buildDelegationRequest({ ...ids, task: longTask, agent });
    assert.deepEqual(r.capabilities, { requested: READ_ONLY, effective: READ_ONLY });
    assert.deepEqual(r.message.metadata?.[META.capabilities], READ_ONLY);
    assert.equal(r.title, 'x'.repeat(TITLE_LENGTH));
    assert.equal(TITLE_LENGTH, 200);
    assert.deepEqual(r.chain, ['formatter']);
    assert.deepEqual(r.message.metadata?.[META.chain], ['formatter']);
    assert.equal(r.message.messageId, ids.requestId);
    assert.equal('deadline' in r, false, 'no deadline unless one is given');
  });

  it('names files to read without their text, after the ones that travel, and lists unsaved ones', () => {
    const r = buildDelegationRequest({
      ...ids,
      task: 't',
      agent,
      files: [{ path: 'a.ts', text: 'A' }],
      paths: ['b.ts', 'a.ts'],
      unsaved: ['a.ts'],
    });
    assert.deepEqual(r.message.metadata?.[META.files], ['a.ts', 'b.ts']);
    assert.deepEqual(r.message.metadata?.[`${META.files}.unsaved`], ['a.ts']);
    assert.equal(r.message.parts.length, 2, 'the task and a.ts; b.ts is only named');
  });
});

describe('the CLI and the extension build the same request', () => {
  const extension = (capabilities: DelegationRequest['capabilities']['requested']): DelegationRequest =>
    extensionDelegationRequest({
      ...ids,
      agent,
      choice: { task: longTask, capabilities },
      context: { files: [], diagnostics: [], unsaved: [] },
      repository,
      deadline: undefined,
    });

  it('read-only by default, with the same title and message', () => {
    const cli = cliDelegationRequest({ ...ids, agent, task: longTask, files: [], repository, write: false });
    assert.deepEqual(cli, extension(READ_ONLY));
  });

  it('--write asks for what the extension asks for when the user allows edits', () => {
    const cli = cliDelegationRequest({ ...ids, agent, task: longTask, files: [], repository, write: true });
    assert.deepEqual(cli, extension({ ...READ_ONLY, write: true }));
  });
});
