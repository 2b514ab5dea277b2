/**
 * The formatter agent's thread (bundled as dist/gateway-format.js with Prettier's standalone build
 * and its plugins, so the gateway neither loads nor runs Prettier on its own thread).
 */
import type { Options, Plugin, SupportInfo } from 'prettier';
import { format, getSupportInfo } from 'prettier/standalone';
import * as babel from 'prettier/plugins/babel';
import * as estree from 'prettier/plugins/estree';
import * as html from 'prettier/plugins/html';
import * as markdown from 'prettier/plugins/markdown';
import * as postcss from 'prettier/plugins/postcss';
import * as typescript from 'prettier/plugins/typescript';
import * as yaml from 'prettier/plugins/yaml';
import { serveThread } from '../threadServer';
import type { FormatApi } from './formatApi';

const PLUGINS = [babel, estree, typescript, postcss, markdown, yaml, html] as unknown as Plugin[];

const api: FormatApi = {
  async supported() {
    // The standalone build takes the plugins to describe, though its typings say it takes nothing.
    const info = getSupportInfo as unknown as (o: { plugins: Plugin[] }) => Promise<SupportInfo>;
    const { languages } = await info({ plugins: PLUGINS });
    const extensions = new Set<string>();
    const filenames = new Set<string>();
    for (const lang of languages) {
      for (const e of lang.extensions ?? []) extensions.add(e.toLowerCase());
      for (const f of lang.filenames ?? []) filenames.add(f);
    }
    return { extensions: [...extensions], filenames: [...filenames] };
  },
  async format(text: string, options: Options, filepath: string) {
    try {
      return { output: await format(text, { ...options, filepath, plugins: PLUGINS }) };
    } catch (e) {
      return { error: e instanceof Error ? e.message : String(e) };
    }
  },
};

serveThread(api);
