import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, gatewayLimitsOf, parseGatewayConfig, sha256HexOf } from '../../../src/gateway/config';
import { livenessFor } from '../../../src/gateway/instanceLiveness';

const parse = (v: unknown, env: NodeJS.ProcessEnv = {}): ReturnType<typeof parseGatewayConfig> =>
  parseGatewayConfig(typeof v === 'string' ? v : JSON.stringify(v), 'gateway.json', env);

describe('gateway config', () => {
  it('reads a full team config, secrets from the environment, tokens kept only as digests', () => {
    const c = parse(
      {
        port: 8787,
        roots: ['/srv/repos'],
        store: { kind: 'postgres', urlEnv: 'PG' },
        tokens: [{ principal: 'ci', tokenEnv: 'CI_TOKEN' }],
        localAgents: ['formatter'],
        agents: { reviewer: { url: 'https://r.example/a2a/', protocolVersion: '0.3', auth: { bearerEnv: 'R' } } },
        limits: {
          cancelGraceSeconds: 3,
          headersTimeoutSeconds: 20,
          bodyIdleSeconds: 5,
          bodyTimeoutSeconds: 30,
          maxJsonDepth: 32,
          maxJsonMembers: 5000,
          maxRunningTasksPerPrincipal: 2,
        },
      },
      { PG: 'postgres://u@h/db', CI_TOKEN: 'a-long-enough-ci-token', R: 'remote-secret' },
    );
    assert.deepEqual(c.store, { kind: 'postgres', url: 'postgres://u@h/db' });
    assert.deepEqual(parse({ store: { kind: 'postgres', url: 'postgres://u@h/db', takeOverAfterSeconds: 12 } }).store, {
      kind: 'postgres',
      url: 'postgres://u@h/db',
      takeOverAfterSeconds: 12,
    });
    // Six heartbeats within the take-over time, never rarer than every 5 s; the defaults without it.
    assert.deepEqual(livenessFor(12_000), { staleMs: 12_000, heartbeatMs: 2_000 });
    assert.deepEqual(livenessFor(60_000), { staleMs: 60_000, heartbeatMs: 5_000 });
    assert.deepEqual(livenessFor(undefined), { staleMs: 30_000, heartbeatMs: 5_000 });
    assert.deepEqual(c.tokens, [{ principal: 'ci', sha256: sha256HexOf('a-long-enough-ci-token') }]);
    assert.equal(c.remoteAgents[0].url, 'https://r.example/a2a');
    assert.deepEqual(c.remoteAgents[0].auth, { kind: 'bearer', token: 'remote-secret' });
    assert.equal(c.remoteAgents[0].protocolVersion, '0.3');
    assert.deepEqual(c.localAgents, ['formatter']);
    const { headersTimeoutSeconds, bodyIdleSeconds, bodyTimeoutSeconds, maxJsonDepth, maxJsonMembers } = c.limits;
    assert.deepEqual(
      { headersTimeoutSeconds, bodyIdleSeconds, bodyTimeoutSeconds, maxJsonDepth, maxJsonMembers },
      { headersTimeoutSeconds: 20, bodyIdleSeconds: 5, bodyTimeoutSeconds: 30, maxJsonDepth: 32, maxJsonMembers: 5000 },
    );
    assert.equal(c.limits.maxRunningTasksPerPrincipal, 2);
    // What the gateway is started with: milliseconds, and only what was set.
    assert.deepEqual(gatewayLimitsOf(c.limits), { cancelGraceMs: 3_000, maxRunningPerPrincipal: 2 });
    assert.deepEqual(gatewayLimitsOf(undefined), {});
  });

  it('names the file, the field and what to do', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['{"port": ', /^gateway\.json: is not valid JSON .*fix the syntax/],
      [{ prot: 1 }, /^gateway\.json: prot: is not a setting; known settings here: .*port/],
      [{ port: 70000 }, /^gateway\.json: port: must be a whole number from 0 to 65535/],
      [{ roots: ['relative/dir'] }, /roots\[0\]: must be an absolute folder path/],
      [{ agents: { 'Bad Id': { url: 'https://x' } } }, /agents\.Bad Id: an agent id must be lower-case/],
      [
        { agents: { r: { url: 'https://user:pw@x.example' } } },
        /agents\.r\.url: must not carry credentials; put them under "auth"/,
      ],
      [{ agents: { r: { url: 'ftp://x.example' } } }, /agents\.r\.url: must use https/],
      [
        { agents: { r: { url: 'https://x', auth: { bearerEnv: 'NOPE' } } } },
        /agents\.r\.auth\.bearerEnv: environment variable NOPE is not set; export it/,
      ],
      [
        { agents: { r: { url: 'https://x', protocolVersion: '2.0' } } },
        /agents\.r\.protocolVersion: must be "1\.0" or "0\.3"/,
      ],
      [{ tokens: [{ principal: 'a', token: 'short' }] }, /tokens\[0\]: the token is shorter than 16 characters/],
      [{ tokens: [{ principal: 'a', sha256: 'xyz' }] }, /tokens\[0\]\.sha256: must be 64 hex digits/],
      [{ store: { kind: 'mysql' } }, /store\.kind: must be "sqlite" or "postgres"/],
      [{ store: { kind: 'postgres', url: 'http://x' } }, /store\.url: must be a postgres:\/\/ connection string/],
      [
        { store: { kind: 'postgres', url: 'postgres://u@h/db', takeOverAfterSeconds: 0 } },
        /store\.takeOverAfterSeconds: must be a whole number from 1 to 3600/,
      ],
      [{ limits: { capabilities: { write: 'yes' } } }, /limits\.capabilities\.write: must be true or false/],
      [
        { limits: { maxRunningTasksPerPrincipal: 0 } },
        /limits\.maxRunningTasksPerPrincipal: must be a whole number from 1 to 1000/,
      ],
      [{ limits: { maxJsonDepth: 4 } }, /limits\.maxJsonDepth: must be a whole number from 16 to 1000/],
      [{ limits: { bodyIdleSeconds: 0 } }, /limits\.bodyIdleSeconds: must be a whole number from 1 to 600/],
    ];
    for (const [input, message] of cases) {
      assert.throws(
        () => parse(input),
        (e: unknown) => e instanceof ConfigError && message.test(e.message),
        JSON.stringify(input),
      );
    }
  });
  it('reads the extensions a remote speaks without declaring them, and refuses what is not a list of URIs', () => {
    const uri = 'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';
    const c = parse({ agents: { gemini: { url: 'http://127.0.0.1:41242/', extensions: [uri, uri] } } });
    assert.deepEqual(c.remoteAgents[0].extensions, [uri]);
    assert.equal(parse({ agents: { g: { url: 'http://127.0.0.1:1/' } } }).remoteAgents[0].extensions, undefined);
    for (const bad of ['not-a-list', ['no uri'], [42]])
      assert.throws(
        () => parse({ agents: { g: { url: 'http://127.0.0.1:1/', extensions: bad } } }),
        (e: unknown) =>
          e instanceof ConfigError && /agents\.g\.extensions: must be a list of extension URIs/.test(e.message),
      );
  });
});

describe('gateway config: agent-started delegations', () => {
  it('reads maxDepth, maxBreadth, burst, consent and consentTimeoutSeconds', () => {
    const c = parse({
      maxDepth: 3,
      maxBreadth: 5,
      burst: { max: 4, windowSeconds: 30 },
      consent: { formatter: 'allow', codex: 'deny' },
      consentTimeoutSeconds: 20,
    });
    assert.deepEqual(c.delegation, {
      maxDepth: 3,
      maxBreadth: 5,
      burst: { max: 4, windowSeconds: 30 },
      consent: { formatter: 'allow', codex: 'deny' },
      consentTimeoutSeconds: 20,
    });
    assert.deepEqual(parse({}).delegation, {
      maxDepth: undefined,
      maxBreadth: undefined,
      consentTimeoutSeconds: undefined,
    });
  });

  it('refuses what it cannot hold, saying what to write', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ maxDepth: 4 }, /maxDepth: must be a whole number from 0 to 3/],
      [{ maxBreadth: 0 }, /maxBreadth: must be a whole number from 1 to 100/],
      [{ burst: { max: 3 } }, /burst: needs both "max" and "windowSeconds"/],
      [{ burst: { max: 3, windowSeconds: 60, per: 1 } }, /burst\.per: is not a setting/],
      [{ consent: { formatter: 'yes' } }, /consent\.formatter: must be "allow" .* or "deny"/],
    ];
    for (const [input, want] of cases) assert.throws(() => parse(input), want, JSON.stringify(input));
  });
});

describe('gateway config: retention', () => {
  it('reads the retention settings, and gives the defaults for what is left out', async () => {
    const { DEFAULT_RETENTION, retentionFromConfig } = await import('../../../src/gateway/retention');
    const c = parse({
      retention: { finishedTaskHours: 24, maxStoreMb: 64, replayWindowMinutes: 0, intervalSeconds: 5 },
    });
    assert.deepEqual(c.retention, {
      finishedTaskHours: 24,
      maxStoreMb: 64,
      replayWindowMinutes: 0,
      intervalSeconds: 5,
    });
    assert.deepEqual(retentionFromConfig(c.retention), {
      keepFinishedMs: 24 * 3_600_000,
      maxStoreBytes: 64 * 1024 * 1024,
      replayWindowMs: 0,
      intervalMs: 5_000,
    });
    assert.deepEqual(retentionFromConfig(parse({}).retention), DEFAULT_RETENTION);
    assert.deepEqual(DEFAULT_RETENTION, {
      keepFinishedMs: 168 * 3_600_000,
      maxStoreBytes: 2048 * 1024 * 1024,
      replayWindowMs: 3_600_000,
      intervalMs: 60_000,
    });
  });

  it('names the retention field that is wrong, and refuses unknown ones', () => {
    const fails = (v: unknown, re: RegExp): void => assert.throws(() => parse(v), re);
    fails({ retention: { maxStoreMb: -1 } }, /retention\.maxStoreMb: must be a whole number from 0/);
    fails({ retention: { finishedTaskHours: 1.5 } }, /retention\.finishedTaskHours: must be a whole number/);
    fails({ retention: { intervalSeconds: 0 } }, /retention\.intervalSeconds: must be a whole number from 1/);
    fails(
      { retention: { maxStoreGb: 1 } },
      /retention\.maxStoreGb: is not a setting; known settings here: finishedTaskHours/,
    );
    fails({ retention: 7 }, /retention: must be an object/);
  });
});
