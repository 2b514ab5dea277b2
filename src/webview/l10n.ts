import * as l10n from '@vscode/l10n';
import type { Translate } from '../core/protocol/l10n';

/** The attribute of the panel's root element that carries the host's translations (see webviewHtml.ts). */
export const L10N_ATTRIBUTE = 'data-l10n';

/**
 * Loads the translations the host put in the page, once, before the first render. English needs
 * none: without a bundle (or with one that cannot be read) `l10n.t` returns the English message.
 */
export function configureL10n(root: Element | null): void {
  const raw = root?.getAttribute(L10N_ATTRIBUTE);
  if (!raw) return;
  try {
    const contents: unknown = JSON.parse(raw);
    if (contents && typeof contents === 'object' && !Array.isArray(contents))
      l10n.config({ contents: contents as Record<string, string> });
  } catch {
    // A bundle that does not parse leaves the panel in English rather than blank.
  }
}

/** What the panel gives a pure renderer of src/core/protocol as its `t`: the host's translations. */
export const t: Translate = l10n.t;

/** "1 file", "3 files": one message per form, so a language with other plural rules can say both right. */
export function fileCount(n: number): string {
  return n === 1 ? l10n.t('{0} file', n) : l10n.t('{0} files', n);
}

/** A signature's status in words (the status itself stays the `class`/data for styling and tests). */
export function signatureLabel(status: 'verified' | 'unsigned' | 'invalid' | 'unknown'): string {
  switch (status) {
    case 'verified':
      return l10n.t('verified');
    case 'unsigned':
      return l10n.t('unsigned');
    case 'invalid':
      return l10n.t('invalid');
    case 'unknown':
      return l10n.t('unknown');
  }
}
