// The panel's page carries the host's translations as data: JSON in an escaped attribute the panel
// script reads, so a translated string can neither end the attribute nor add a script the CSP runs.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { panelHtml } from '../../../src/extension/panel/webviewHtml';

const base = {
  cspSource: 'https://webview.invalid',
  scriptUri: 'https://webview.invalid/panel.js',
  codiconCssUri: 'https://webview.invalid/codicon.css',
  title: 'Baton Delegation',
  nonce: 'abc123',
};

const unescape = (s: string): string =>
  s.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e] ?? _,
  );

function bundleAttribute(page: string): string | undefined {
  return /<main id="app"[^>]*? data-l10n="([^"]*)"/.exec(page)?.[1];
}

describe('panelHtml translations', () => {
  it('carries no bundle in English', () => {
    const page = panelHtml(base);
    assert.equal(bundleAttribute(page), undefined);
    assert.match(page, /<html lang="en">/);
  });

  it('carries the bundle JSON-encoded and escaped, and gives it back whole', () => {
    const bundle = {
      Cancel: 'Abbrechen',
      'Applied {0} file(s).': '{0} Datei(en) übernommen.',
      '"quoted" & <b>': '</main><script>alert(1)</script>\' onload="x"',
    };
    const page = panelHtml({ ...base, l10nBundle: bundle, language: 'de' });
    const raw = bundleAttribute(page);
    assert.ok(raw !== undefined, 'the bundle attribute is on the panel root');
    assert.deepEqual(JSON.parse(unescape(raw)), bundle);
    assert.equal(page.match(/<script/g)?.length, 1, 'a translation adds no script element');
    assert.doesNotMatch(raw, /[<>"']/);
    assert.match(page, /<html lang="de">/);
  });

  it('keeps a language tag from breaking out of the lang attribute', () => {
    assert.match(panelHtml({ ...base, language: 'x"><script>' }), /<html lang="x&quot;&gt;&lt;script&gt;">/);
  });
});
