// The review documents' URIs: both sides of a modified file name the same path (VS Code's changes
// editor reads a path difference as a rename), and the review and side travel in the query.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CHANGES_SCHEME,
  changeEntry,
  changesQuery,
  parseReviewDoc,
  REVIEW_SCHEME,
  reviewDocQuery,
  reviewOfUri,
  type SideRef,
} from '../../../src/core/review/reviewUri';

const REVIEW = '6c9734e4-1f0a-4b7e-9d1c-2f4e5a6b7c8d';

/** The path a side is shown under: the file's own path, whatever the side (what the extension puts in the URI's path). */
const pathOf = (s: SideRef | undefined): string | undefined =>
  s === undefined ? undefined : s.kind === 'file' ? s.file : s.doc.file;

describe('review document URIs', () => {
  it('round-trip review, side and file through the query, for awkward file names too', () => {
    for (const file of ['README.md', 'src/a b/c&d=e.ts', 'docs/#1?.md', 'naïve/文件.txt', 'x/%20y']) {
      for (const kind of ['after', 'empty', 'base', 'ours', 'theirs'] as const) {
        const q = reviewDocQuery({ review: REVIEW, kind, file });
        assert.deepEqual(parseReviewDoc(REVIEW_SCHEME, q), { review: REVIEW, kind, file });
        assert.deepEqual(reviewOfUri(REVIEW_SCHEME, q), { review: REVIEW, file });
      }
    }
  });

  it('reads nothing from other schemes, unknown sides or missing fields', () => {
    const q = reviewDocQuery({ review: REVIEW, kind: 'after', file: 'a.txt' });
    assert.equal(parseReviewDoc('file', q), undefined);
    assert.equal(parseReviewDoc(REVIEW_SCHEME, q.replace('side=after', 'side=before')), undefined);
    assert.equal(parseReviewDoc(REVIEW_SCHEME, 'side=after&file=a.txt'), undefined);
    assert.equal(parseReviewDoc(REVIEW_SCHEME, `review=${REVIEW}&side=after`), undefined);
    assert.equal(reviewOfUri('untitled', q), undefined);
  });

  it('the changes editor names its review and no file', () => {
    assert.deepEqual(reviewOfUri(CHANGES_SCHEME, changesQuery(REVIEW)), { review: REVIEW, file: undefined });
    assert.equal(reviewOfUri(CHANGES_SCHEME, ''), undefined);
  });
});

describe('changes editor entries', () => {
  it('a modified file: the working tree and the patched text under the same path, so it is not shown as a rename', () => {
    const e = changeEntry(REVIEW, { status: 'modified', oldPath: 'README.md', newPath: 'README.md' });
    assert.deepEqual(e.original, { kind: 'file', file: 'README.md' });
    assert.deepEqual(e.modified, { kind: 'review', doc: { review: REVIEW, kind: 'after', file: 'README.md' } });
    assert.equal(pathOf(e.original), pathOf(e.modified));
  });

  it('an added file has no original side and a deleted file no modified side (VS Code shows them as added and deleted)', () => {
    const added = changeEntry(REVIEW, { status: 'added', oldPath: undefined, newPath: 'docs/new.md' });
    assert.equal(added.original, undefined);
    assert.equal(pathOf(added.modified), 'docs/new.md');
    const deleted = changeEntry(REVIEW, { status: 'deleted', oldPath: 'docs/old.md', newPath: undefined });
    assert.equal(deleted.modified, undefined);
    assert.deepEqual(deleted.original, { kind: 'file', file: 'docs/old.md' });
    assert.equal(deleted.file, 'docs/old.md');
  });

  it('a rename keeps its old path on the left: that one is a rename', () => {
    const e = changeEntry(REVIEW, { status: 'renamed', oldPath: 'old-name.txt', newPath: 'new-name.txt' });
    assert.equal(pathOf(e.original), 'old-name.txt');
    assert.equal(pathOf(e.modified), 'new-name.txt');
  });
});
