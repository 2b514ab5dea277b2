/**
 * An HTTP answer that is no A2A answer, in words a user can act on. The A2A SDK's client reports one as
 * `HTTP error for <method>! Status: 413 Request Entity Too Large. Response: <the body>` (or `HTTP error
 * establishing stream for <method>: 413 … . Response: …`), body and all: behind nginx that was a whole
 * HTML page in the delegation's outcome. Such an answer usually comes from a web server or proxy in
 * front of the agent, which the user's message never got past.
 */
import { isRecord } from './isRecord';

const SDK_HTTP_ERROR =
  /^HTTP error (?:for (.+?)! Status: |establishing stream for (.+?): )(\d{3}) ?(.*?)\. Response: ([\s\S]*)$/;

/** Web servers and proxies that sign their error pages (nginx's `<center>nginx/1.22.1</center>`, Apache's `<address>`). */
const SERVER_SIGNATURE =
  /\b(nginx|openresty|Apache|Microsoft-IIS|cloudflare|Caddy|envoy|HAProxy|Varnish|Tengine)(\/[\w.]+)?/i;

function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** What an HTML page says of itself: its title (or first heading), and the server that signed it. */
function pageSummary(html: string): { title: string; server: string | undefined } {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1] ?? /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(html)?.[1];
  const signature = SERVER_SIGNATURE.exec(textOf(html.replace(/<title[\s\S]*?<\/title>/i, '')));
  return {
    title: textOf(title ?? '').slice(0, 120),
    server: signature ? `${signature[1]}${signature[2] ?? ''}` : undefined,
  };
}

function isHtml(body: string): boolean {
  return /^\s*(<!doctype html|<html|<head|<body)/i.test(body);
}

/** What to do about a status, when the answer is not the agent's own. */
function advice(status: number): string {
  if (status === 413)
    return 'the request is larger than it accepts; send less (fewer or smaller files), or have its limit raised (nginx: client_max_body_size)';
  if (status === 401 || status === 403)
    return 'it wants a sign-in or refuses this client before the agent sees the request; check the agent’s URL and the credentials it takes';
  if (status === 404) return 'there is no A2A endpoint at this URL; check the agent’s URL (its card names it)';
  return 'check the agent’s URL, and that what is in front of the agent passes A2A requests on';
}

/** The `error.message` (or `message`) of a JSON error body, such as a gateway's 401; else undefined. */
function jsonErrorMessage(body: string): string | undefined {
  if (!body.startsWith('{')) return undefined;
  try {
    const v: unknown = JSON.parse(body);
    if (!isRecord(v)) return undefined;
    const message = (isRecord(v.error) ? v.error.message : undefined) ?? v.message;
    return typeof message === 'string' && message.trim() ? message.trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether an error says the agent (or what is in front of it) refused Baton's credentials: HTTP 401
 * or 403, or A2A's words for them. A new token may be all it takes.
 */
export function isCredentialRefusal(error: string): boolean {
  return /\bHTTP 40[13]\b|\bUNAUTHENTICATED\b|\bPERMISSION_DENIED\b/.test(error);
}

/**
 * `message` made readable when it is the SDK's report of a non-A2A HTTP answer; otherwise as it is.
 * An HTML body becomes its title and the server that signed it, a JSON error body its message; other
 * bodies are cut to one line.
 */
export function readableHttpError(message: string): string {
  const m = SDK_HTTP_ERROR.exec(message);
  if (!m) return message;
  const method = m[1] ?? m[2] ?? 'the request';
  const status = Number(m[3]);
  const statusText = m[4].trim();
  const body = m[5].trim();
  const head = `HTTP ${status}${statusText ? ` ${statusText}` : ''} for ${method}`;
  if (isHtml(body)) {
    const page = pageSummary(body);
    const from = page.server
      ? `answered by ${page.server} (a web server or proxy in front of the agent, not the agent)`
      : 'answered with a web page (from a web server or proxy in front of the agent, not the agent)';
    const said = page.title && page.title !== `${status} ${statusText}` ? `, saying “${page.title}”` : '';
    return `${head}, ${from}${said}: ${advice(status)}`;
  }
  const oneLine = (jsonErrorMessage(body) ?? body).replace(/\s+/g, ' ').slice(0, 200);
  return status === 413
    ? `${head}: ${advice(status)}${oneLine && oneLine !== '(empty)' ? ` (it said: ${oneLine})` : ''}`
    : `${head}${oneLine ? `: ${oneLine}` : ''}`;
}
