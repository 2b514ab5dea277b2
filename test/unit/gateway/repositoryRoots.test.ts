// Which repositories a request may name: inside a root the gateway serves, both sides resolved the
// same way (on macOS /tmp and /var are symlinks, so a root given as /tmp/… is really /private/tmp/…).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveRepository } from '../../../src/gateway/localTaskRunner';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'baton-roots-')));
after(() => rmSync(base, { recursive: true, force: true }));

const real = join(base, 'private', 'projects');
const repo = join(real, 'repo');
const outside = join(base, 'elsewhere');
mkdirSync(repo, { recursive: true });
mkdirSync(outside);
// `projects` reached through a symlink, like /tmp → /private/tmp.
const linked = join(base, 'projects');
symlinkSync(real, linked);
// A symlink inside the served folder that points out of it.
symlinkSync(outside, join(real, 'escape'));

const refused = /outside the folders this gateway serves/;

describe('repository roots', () => {
  it('accepts a repository under a root given through a symlink, named either way', () => {
    assert.equal(resolveRepository(join(linked, 'repo'), [linked]), repo);
    assert.equal(resolveRepository(repo, [linked]), repo);
    assert.equal(resolveRepository(linked, [linked]), real);
    assert.equal(resolveRepository(join(linked, 'repo'), [real]), repo);
  });

  it('still refuses a path that really is outside every root', () => {
    assert.throws(() => resolveRepository(outside, [linked]), refused);
    assert.throws(() => resolveRepository(base, [linked]), refused);
  });

  it('still refuses a symlink inside a root that points outside it', () => {
    assert.throws(() => resolveRepository(join(linked, 'escape'), [linked]), refused);
    assert.throws(() => resolveRepository(join(real, 'escape'), [real]), refused);
  });

  it('a root that does not exist serves nothing, and says so', () => {
    assert.throws(() => resolveRepository(repo, [join(base, 'missing')]), refused);
  });
});
