/**
 * The PostgreSQL store over TLS, as managed databases (and many teams' own) require: a server of this
 * test's own (scripts/postgres.sh in a folder of its own) with `ssl = on` and a certificate from a CA
 * made here with openssl. node-postgres checks the certificate for every sslmode but disable and
 * no-verify, so the `sslmode=require` URL a provider gives fails against a CA Node does not know; the
 * gateway said only "self-signed certificate in certificate chain; check store.url and that the database
 * accepts connections". Each failure now says what to do, and doing it works.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { tempDir } from './helpers';
import { openFails, PG, pgScript, pgSkip } from './pgFaultHelpers';

const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });

describe('PostgreSQL store over TLS', () => {
  const serverDir = join(tmpdir(), `baton-pg-tls-${randomBytes(6).toString('hex')}`);
  const certs = tempDir('baton-pg-certs-');
  const ca = join(certs.path, 'ca.pem');
  let base = '';

  /** A server certificate signed by the test's CA for `san`, installed in the server and loaded. */
  const serveCertificate = async (san: string): Promise<void> => {
    const dir = certs.path;
    openssl(
      'req',
      '-new',
      '-nodes',
      '-newkey',
      'rsa:2048',
      '-keyout',
      join(dir, 'server.key'),
      '-out',
      join(dir, 'server.csr'),
      '-subj',
      '/CN=baton-test-db',
    );
    writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${san}\n`);
    openssl(
      'x509',
      '-req',
      '-in',
      join(dir, 'server.csr'),
      '-CA',
      ca,
      '-CAkey',
      join(dir, 'ca.key'),
      '-CAcreateserial',
      '-out',
      join(dir, 'server.crt'),
      '-days',
      '2',
      '-extfile',
      join(dir, 'ext.cnf'),
    );
    const data = join(serverDir, 'data');
    for (const f of ['server.key', 'server.crt']) {
      copyFileSync(join(dir, f), join(data, f));
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres', join(data, f)]);
      execFileSync('chmod', ['600', join(data, f)]);
    }
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query('ALTER SYSTEM SET ssl = on');
    await admin.query('SELECT pg_reload_conf()');
    await admin.end();
    await new Promise((r) => setTimeout(r, 300));
  };

  before(async () => {
    if (!PG) return;
    const out = await pgScript('start', serverDir);
    base = /BATON_TEST_PG=(\S+)/.exec(out)?.[1] ?? '';
    assert.ok(base, `postgres.sh printed no URL: ${out}`);
    openssl(
      'req',
      '-x509',
      '-new',
      '-nodes',
      '-newkey',
      'rsa:2048',
      '-keyout',
      join(certs.path, 'ca.key'),
      '-out',
      ca,
      '-days',
      '2',
      '-subj',
      '/CN=Baton Test CA',
    );
  });
  after(async () => {
    if (PG) await pgScript('stop', serverDir).catch(() => undefined);
    certs[Symbol.dispose]();
  });

  it(
    'sslmode=require with a CA Node does not know says to give sslrootcert (or no-verify); with it, the store opens over TLS',
    { skip: pgSkip },
    async () => {
      await serveCertificate('IP:127.0.0.1,DNS:localhost');
      const said = await openFails(`${base}?sslmode=require`);
      assert.match(said, /the database's TLS certificate is not trusted \(unable to verify the first certificate\)/);
      assert.match(said, /add sslrootcert=<file> to the URL/);
      assert.match(said, /sslmode=no-verify/);
      assert.doesNotMatch(said, /accepts connections/);

      const verified = `${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;
      const store = await PostgresGatewayStore.open(verified);
      await store.close();
      const c = new pg.Client({ connectionString: verified });
      await c.connect();
      const r = await c.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      await c.end();
      assert.equal(r.rows[0]?.ssl, true, 'the connection is encrypted');

      const unchecked = await PostgresGatewayStore.open(`${base}?sslmode=no-verify`);
      await unchecked.close();
    },
  );

  it('a certificate for another host name is said so', { skip: pgSkip }, async () => {
    await serveCertificate('DNS:db.example');
    const said = await openFails(`${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`);
    assert.match(
      said,
      /the database's TLS certificate is for another host name \(Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list.*\): connect with a host name it names/,
    );
  });
});
