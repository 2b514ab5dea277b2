// The SQLite store finds node:sqlite by loading it, and says what to do when no driver loads.
import * as assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { noSqliteMessage, probeNodeSqlite } from '../../../src/gateway/store/sqliteStore';

describe('SQLite driver probe', () => {
  it('counts node:sqlite only when it loads and has DatabaseSync, whatever the version number says', () => {
    const missing = Object.assign(new Error('No such built-in module: node:sqlite'), {
      code: 'ERR_UNKNOWN_BUILTIN_MODULE',
    });
    assert.equal(
      probeNodeSqlite(() => {
        throw missing;
      }),
      false,
    );
    assert.equal(
      probeNodeSqlite(() => ({})),
      false,
    );
    assert.equal(
      probeNodeSqlite(() => ({ DatabaseSync: class {} })),
      true,
    );
    // This runtime: the probe agrees with loading the module here.
    let loads = false;
    try {
      loads =
        typeof (createRequire(__filename)('node:sqlite') as { DatabaseSync?: unknown }).DatabaseSync === 'function';
    } catch {
      loads = false;
    }
    assert.equal(probeNodeSqlite(), loads);
  });

  it('inside VS Code, says to update VS Code (there is no Node or npm to change)', () => {
    const m = noSqliteMessage({ node: '20.19.0', electron: '34.5.1' }, 'Cannot find module better-sqlite3');
    assert.match(m, /Node 20\.19\.0, Electron 34\.5\.1/);
    assert.match(m, /Update VS Code to 1\.101 or newer/);
    assert.doesNotMatch(m, /npm|better-sqlite3/);
  });

  it('on a Node of its own, says which Node has it and how to rebuild the native driver', () => {
    const m = noSqliteMessage({ node: '20.18.0' }, 'was compiled against a different Node.js version');
    assert.match(m, /Node 20\.18\.0 has no node:sqlite/);
    assert.match(m, /was compiled against a different Node\.js version/);
    assert.match(m, /Node 22\.13 or newer/);
    assert.match(m, /npm rebuild better-sqlite3/);
  });
});
