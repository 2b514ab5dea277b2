/** `baton-gateway --max-depth` / `--max-breadth`, and the policy's bounds when the gateway is started in-process. */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../../../src/gateway/server';
import { tempDir } from '../gateway/helpers';
import { ROOT } from './helpers';

const CLI = resolve(ROOT, 'src/gateway/cli.ts');

describe('baton-gateway delegation guard options', () => {
  it('refuses a depth above 3 or a breadth below 1, saying the range', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--max-depth', '4'], /--max-depth must be a whole number from 0 to 3/],
      [['--max-depth', 'deep'], /--max-depth must be a whole number from 0 to 3/],
      [['--max-breadth', '0'], /--max-breadth must be a whole number from 1 to 100/],
    ];
    for (const [args, want] of cases) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args, '--no-local-agents'], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, want);
    }
  });

  it('startGateway refuses a policy it cannot hold', async () => {
    using dir = tempDir();
    await assert.rejects(
      startGateway({ stateDir: join(dir.path, 'state'), delegation: { maxDepth: 4 }, log: () => undefined }),
      /maxDepth must be a whole number from 0 to 3/,
    );
  });
});
