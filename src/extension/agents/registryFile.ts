/**
 * Where the governed agents are kept: a file in the extension's global storage folder (on the machine
 * the extension runs on), written atomically. Not globalState: in a browser-hosted workbench that lives
 * in the browser and is only flushed now and then.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class RegistryFile {
  /** The write in progress (or the last one): writes go one at a time, in the order they were asked for. */
  private last: Promise<void> = Promise.resolve();

  constructor(readonly path: string) {}

  read(): string | undefined {
    return existsSync(this.path) ? readFileSync(this.path, 'utf8') : undefined;
  }

  /**
   * Writes `text` once the writes asked for before it are done, so the file ends with the last text
   * given: two at once shared one temporary file, and the second's rename found it gone (ENOENT).
   * A write that failed does not hold up the next.
   */
  write(text: string): Promise<void> {
    const run = this.last.catch(() => undefined).then(() => this.writeNow(text));
    this.last = run;
    return run;
  }

  private async writeNow(text: string): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, this.path);
  }
}
