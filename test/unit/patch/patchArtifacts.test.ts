// Which artifacts are patches, whatever the agent called them (src/core/patch/patchArtifacts.ts): by
// media type, by file name, or because their text is a diff — and which are not, though they look close.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Artifact, Part } from '@a2a-js/sdk';
import {
  diffInText,
  fencedDiffs,
  isDiffMediaType,
  isDiffText,
  isPatchArtifact,
  scanPatches,
} from '../../../src/core/patch/patchArtifacts';

const GIT = 'diff --git a/a.ts b/a.ts\n--- a/a.ts\n+++ b/a.ts\n@@ -1 +1 @@\n-a\n+b\n';
const PLAIN = '--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n';

function part(content: Part['content'], mediaType = 'text/plain', filename = ''): Part {
  return { content, mediaType, filename, metadata: undefined };
}
function artifact(name: string, parts: Part[], artifactId = name || 'a'): Artifact {
  return { artifactId, name, description: '', parts, metadata: undefined, extensions: [] };
}
const text = (value: string, mediaType?: string, filename?: string) =>
  part({ $case: 'text', value }, mediaType, filename);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

describe('patch artifacts: recognised by media type, name or content', () => {
  it('media types: text/x-diff and text/x-patch, with parameters and in any case; others not', () => {
    for (const t of ['text/x-diff', 'text/x-patch', 'text/x-diff; charset=utf-8', 'Text/X-Patch ;charset=UTF-8'])
      assert.equal(isDiffMediaType(t), true, t);
    for (const t of ['text/plain', 'text/markdown', 'application/json', '', 'text/x-diffs'])
      assert.equal(isDiffMediaType(t), false, t);
  });

  it('a diff is text that starts as one and parses; prose that shows its headers is not', () => {
    assert.equal(isDiffText(GIT), true);
    assert.equal(isDiffText(PLAIN), true);
    assert.equal(isDiffText(`\n\n${GIT}`), true);
    for (const prose of [
      '# Tool\n\nA diff starts with `--- a/` and `+++ b/` lines.\n',
      '--- a/config\n+++ b/config\n\nThe two lines above are how a diff starts.\n',
      `Here is the fix:\n${PLAIN}`,
      '--- a/x\nnot a header\n@@ -1 +1 @@\n',
      '',
    ])
      assert.equal(isDiffText(prose), false, prose);
  });

  it('fenced diff blocks in markdown, those that are diffs only; the whole text when it is one', () => {
    const md = `Fixed.\n\n\`\`\`diff\n${GIT}\`\`\`\n\nAnd:\n\n~~~patch\n${PLAIN}~~~\n\n\`\`\`diff\nnot a diff\n\`\`\`\n`;
    assert.deepEqual(fencedDiffs(md), [GIT, PLAIN]);
    assert.equal(diffInText(md), GIT + PLAIN);
    assert.equal(diffInText(GIT), GIT);
    assert.equal(diffInText('```ts\nconst a = 1;\n```'), undefined);
  });

  it('which artifacts are patches', () => {
    const yes = [
      artifact('changes.patch', [text('anything')]),
      artifact('fix.diff', [text(GIT)]),
      artifact('', [part({ $case: 'raw', value: Buffer.from(GIT) }, 'text/x-patch')]),
      artifact('out', [text(GIT, 'text/x-diff; charset=utf-8')]),
      artifact('out', [text(PLAIN, 'text/plain', 'edit.patch')]),
      artifact('result', [text(GIT)]),
      artifact('summary', [text(`I changed one line:\n\n\`\`\`diff\n${GIT}\`\`\`\n`)]),
    ];
    const no = [
      artifact('README.md', [text('--- a/config\n+++ b/config\n\nThat is a header.\n', 'text/markdown')]),
      artifact('notes', [text('run ./setup.sh first')]),
      artifact('data', [part({ $case: 'data', value: { diff: GIT } }, 'application/json')]),
      artifact('image', [part({ $case: 'raw', value: Buffer.from([0x89, 0x50]) }, 'image/png')]),
    ];
    for (const a of yes) assert.equal(isPatchArtifact(a), true, JSON.stringify(a.name));
    for (const a of no) assert.equal(isPatchArtifact(a), false, JSON.stringify(a.name));
  });

  it('scans a result: changes.patch first, every other patch after it, links named, not fetched', () => {
    const scan = scanPatches(
      [
        artifact('fix.diff', [text(GIT)], 'a1'),
        artifact('changes.patch', [text(PLAIN)], 'a2'),
        artifact('remote', [part({ $case: 'url', value: 'https://x.example/p.diff' }, 'text/x-diff')], 'a3'),
        artifact('README.md', [text('see the diff')], 'a4'),
      ],
      { messageId: 'm1', parts: [text(`Also:\n\n\`\`\`diff\n${PLAIN}\`\`\``, 'text/x-diff')] },
    );
    assert.deepEqual(
      scan.patches.map((p) => [p.artifactId, p.name, p.source, decode(p.bytes)]),
      [
        ['a2', 'changes.patch', 'artifact', PLAIN],
        ['a1', 'fix.diff', 'artifact', GIT],
        ['message:m1', 'message', 'message', PLAIN],
      ],
    );
    assert.deepEqual(scan.problems, [
      { kind: 'url', artifactId: 'a3', name: 'remote', url: 'https://x.example/p.diff' },
    ]);
    assert.deepEqual(scan.named, ['a2']);
  });

  it('a message is prose whatever its media type says: only a diff in its text counts', () => {
    const scan = scanPatches([], { messageId: 'm', parts: [text('done: one file changed', 'text/x-diff')] });
    assert.deepEqual(scan.patches, []);
  });

  it('changes.patch keeps its rules: a part that is not text makes it unusable; two are ambiguous', () => {
    const raw = part({ $case: 'raw', value: Buffer.from(GIT) }, 'text/x-diff', 'changes.patch');
    const bad = scanPatches([artifact('changes.patch', [text(GIT), raw])]);
    assert.deepEqual(bad.patches, []);
    assert.equal(bad.problems[0]?.kind, 'not-text');
    const two = scanPatches([
      artifact('changes.patch', [text(GIT)], 'p1'),
      artifact('changes.patch', [text(GIT)], 'p2'),
    ]);
    assert.deepEqual(two.named, ['p1', 'p2']);
  });
});
