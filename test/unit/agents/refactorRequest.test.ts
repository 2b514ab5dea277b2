/** The refactoring agent's request grammar, scope paths and reply matching (pure functions). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Candidate } from '../../../src/gateway/agents/refactor/languageService';
import {
  matchesPath,
  parseRefactorRequest,
  pathsIn,
  pickCandidate,
} from '../../../src/gateway/agents/refactor/refactorRequest';

describe('refactor request grammar', () => {
  it('reads renames, with quotes, kinds and a scope', () => {
    assert.deepEqual(parseRefactorRequest('rename calculateTotal to computeTotal'), {
      ops: [{ kind: 'rename', from: 'calculateTotal', to: 'computeTotal' }],
      paths: [],
    });
    assert.deepEqual(parseRefactorRequest('Rename the function `Cart` to `Basket` in src/cart.js.'), {
      ops: [{ kind: 'rename', from: 'Cart', to: 'Basket' }],
      paths: ['src/cart.js'],
    });
    assert.deepEqual(parseRefactorRequest('rename "a" -> "b" across the whole repository'), {
      ops: [{ kind: 'rename', from: 'a', to: 'b' }],
      paths: [],
    });
    assert.match((parseRefactorRequest('rename x to class') as { error: string }).error, /reserved word/);
    assert.match(
      (parseRefactorRequest('rename the thing') as { error: string }).error,
      /A rename reads "rename <name> to <new name>"/,
    );
  });

  it('reads organise imports and fix all, alone or together, with paths and globs', () => {
    assert.deepEqual(parseRefactorRequest('Organize imports in src/**/*.ts'), {
      ops: [{ kind: 'organize-imports' }],
      paths: ['src/**/*.ts'],
    });
    assert.deepEqual(parseRefactorRequest('organise imports and fix all in src/, lib/a.js'), {
      ops: [{ kind: 'fix-all' }, { kind: 'organize-imports' }],
      paths: ['src/', 'lib/a.js'],
    });
    assert.deepEqual(parseRefactorRequest('apply all code fixes'), { ops: [{ kind: 'fix-all' }], paths: [] });
    const help = parseRefactorRequest('make it better') as { error: string };
    assert.match(help.error, /not one the refactoring agent understands/);
    assert.match(help.error, /rename calculateTotal to computeTotal/);
  });

  it('matches files to folders, files and globs', () => {
    assert.deepEqual(pathsIn('fix all in ./src/a.ts and https://example.invalid/x'), ['src/a.ts']);
    assert.ok(matchesPath('src/a/b.ts', 'src/'));
    assert.ok(matchesPath('src/a/b.ts', 'src'));
    assert.ok(!matchesPath('srcx/b.ts', 'src'));
    assert.ok(matchesPath('src/a/b.ts', 'src/**/*.ts'));
    assert.ok(matchesPath('src/b.ts', 'src/**/*.ts'));
    assert.ok(!matchesPath('src/b.js', 'src/**/*.ts'));
    assert.ok(matchesPath('src/b.js', '*/b.js'));
    assert.ok(!matchesPath('x/src/b.js', 'src/*.js'));
  });

  it('matches replies to candidates, or says why not', () => {
    const c = (file: string, line: number): Candidate => ({ file, line, column: 1, kind: 'function', pos: 0 });
    const list = [c('src/cart.js', 4), c('src/invoice.ts', 12), c('src/invoice.ts', 30)];
    assert.deepEqual(pickCandidate('1', list), { index: 0 });
    assert.deepEqual(pickCandidate(' #2. ', list), { index: 1 });
    assert.deepEqual(pickCandidate('the 3rd one', list), { index: 2 });
    assert.deepEqual(pickCandidate('the one in src/cart.js', list), { index: 0 });
    assert.deepEqual(pickCandidate('cart.js', list), { index: 0 });
    assert.deepEqual(pickCandidate('src/invoice.ts:30', list), { index: 2 });
    assert.deepEqual(pickCandidate('4', list), { why: 'there is no number 4: choose 1 to 3' });
    assert.deepEqual(pickCandidate('src/invoice.ts', list), {
      why: 'src/invoice.ts has 2 of them: reply with the number or file:line',
    });
    assert.deepEqual(pickCandidate('src/invoice.ts:7', list), {
      why: 'none of them is at line 7 of src/invoice.ts (there: line 12, 30)',
    });
    assert.deepEqual(pickCandidate('whichever', list), { why: '"whichever" names none of them' });
  });
});
