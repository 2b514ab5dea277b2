/**
 * What Baton checked before it handed a card fetch to the user's HTTP proxy (VS Code's `http.proxy`).
 *
 * Through a proxy the proxy dials, so Baton cannot pin the address it connects to. What it can do is
 * resolve the name itself first and refuse it unless every address is public (or the host is one the
 * user listed in `baton.privateHosts`). This record says which of the two happened, for the review page.
 */
export interface ProxyCheck {
  /** The proxy's URL, without credentials. */
  readonly proxy: string;
  readonly host: string;
  /** `public`: every address the name resolved to was public; `allowed-host`: listed in baton.privateHosts, not checked. */
  readonly checked: 'public' | 'allowed-host';
  /** The addresses checked (for `public`); empty for `allowed-host`. */
  readonly addresses: readonly string[];
}

const MAX_SHOWN = 4;

/** One sentence for the review page: the proxy used and what was checked before the fetch went to it. */
export function proxyCheckText(c: ProxyCheck): string {
  if (c.checked === 'allowed-host') {
    return `Fetched through the proxy ${c.proxy}. ${c.host} is listed in baton.privateHosts, so its address was not checked; the proxy chose where to connect.`;
  }
  const shown =
    c.addresses.slice(0, MAX_SHOWN).join(', ') +
    (c.addresses.length > MAX_SHOWN ? `, and ${c.addresses.length - MAX_SHOWN} more` : '');
  const what =
    c.addresses.length === 1 && c.addresses[0] === c.host
      ? `${c.host} is a public address`
      : `${c.host} resolved to public addresses only (${shown})`;
  return (
    `Fetched through the proxy ${c.proxy}; ${what}, checked before the request was handed to the proxy. ` +
    'The proxy resolves the name again itself, so Baton could not pin the address it connected to.'
  );
}
