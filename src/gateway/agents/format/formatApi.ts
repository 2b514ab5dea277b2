/** The calls the formatter agent's thread answers (format/formatWorker.ts). */
import type { Options } from 'prettier';

export interface FormatApi {
  /** The file extensions (lower case, with the dot) and file names Prettier's plugins format. */
  supported(): Promise<{ extensions: string[]; filenames: string[] }>;
  /** One file's text formatted, or why Prettier could not (a parse error). */
  format(text: string, options: Options, filepath: string): Promise<{ output: string } | { error: string }>;
}
