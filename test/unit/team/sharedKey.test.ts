import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, parseGatewayConfig } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import { generateSigningKey, writeSigningKey } from '../../../src/node/signing';
import { tempDir } from '../gateway/helpers';

const ROOT = resolve(__dirname, '../../..');

describe('team gateway: one signing key for every instance (keyFile)', () => {
  it('signs cards and results with the named key and makes none of its own', async () => {
    using dir = tempDir();
    const key = await generateSigningKey();
    const keyFile = join(dir.path, 'team-key.jwk');
    await writeSigningKey(key, keyFile);
    const stateDir = join(dir.path, 'state');
    const gw = await startGateway({ stateDir, keyFile, log: () => undefined });
    try {
      const card = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as {
        signatures: Array<{ protected: string }>;
      };
      const header = JSON.parse(Buffer.from(card.signatures[0].protected, 'base64url').toString()) as { kid?: string };
      assert.equal(header.kid, key.kid);
      assert.equal(existsSync(join(stateDir, 'gateway-key.jwk')), false, 'no key of its own');
    } finally {
      await gw.close();
    }
  });

  it('refuses to start when the named key is missing or others can read it, saying what to do', async () => {
    using dir = tempDir();
    const keyFile = join(dir.path, 'team-key.jwk');
    await assert.rejects(startGateway({ stateDir: join(dir.path, 'a'), keyFile, log: () => undefined }), (e: Error) => {
      assert.match(e.message, /Cannot read the signing key .*team-key\.jwk/);
      assert.match(e.message, /copy one gateway's <state>\/gateway-key\.jwk there \(mode 0600\) on each host/);
      return true;
    });
    assert.equal(existsSync(keyFile), false, 'the gateway never creates a shared key');
    await writeSigningKey(await generateSigningKey(), keyFile);
    chmodSync(keyFile, 0o644);
    await assert.rejects(startGateway({ stateDir: join(dir.path, 'b'), keyFile, log: () => undefined }), /chmod 600/);
  });

  it('takes keyFile from the config as an absolute path only', () => {
    const cfg = parseGatewayConfig('{"keyFile": "/etc/baton/gateway-key.jwk"}', 'gateway.json');
    assert.equal(cfg.keyFile, '/etc/baton/gateway-key.jwk');
    assert.throws(
      () => parseGatewayConfig('{"keyFile": "gateway-key.jwk"}', 'gateway.json'),
      (e: unknown) => e instanceof ConfigError && /keyFile: must be an absolute path/.test(e.message),
    );
  });

  it('docs/gateway.md shows the example configs the team test runs, as they are', () => {
    const doc = readFileSync(join(ROOT, 'docs/gateway.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Team deployment'));
    for (const f of ['docs/examples/nginx.conf', 'docs/examples/team-gateway.json'])
      assert.ok(section.includes(readFileSync(join(ROOT, f), 'utf8')), `${f} is in "Team deployment" word for word`);
  });
});
