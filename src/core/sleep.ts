/**
 * The one wait Baton uses between retries and polls. It resolves (never rejects) after `ms`, or as
 * soon as `signal` aborts, so a caller checks its signal afterwards instead of catching.
 */
export function sleep(ms: number, signal?: AbortSignal, options: { readonly unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    // A wait that must not keep the process alive on its own (a background retry).
    if (options.unref) timer.unref();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
