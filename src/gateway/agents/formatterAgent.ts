/**
 * The `formatter` built-in agent: Prettier over the named files (or every supported file when none
 * are named) in a throwaway workspace, returned as changes.patch. It needs no model and works
 * offline. Prettier runs on a thread of the built-in agents' pool (format/formatWorker.ts, Prettier's
 * standalone build and its plugins), never on the gateway's event loop. Options come from the
 * repository's JSON/YAML Prettier config; a JavaScript config is never loaded, because that would
 * run repository code inside the gateway.
 */
import { readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Options } from 'prettier';
import type { Workspace, WorkspaceManager } from '../workspace/workspaceManager';
import { announceScope, interrupted, readWorkspaceFile, targetFiles, writeWorkspaceFile } from './builtinFiles';
import type { BuiltinThreadPool } from './builtinThreads';
import { onThread, sharedThreadPool, stoppedWork } from './builtinThreads';
import type { FormatApi } from './format/formatApi';
import type { LocalAgent, LocalRunEvent, LocalRunRequest } from './localAgent';
import { runInWorkspace } from './workspaceRun';

const BUILTIN_DETAIL =
  "Built-in agent: runs on one of the gateway's built-in agent threads, on its throwaway workspace only, and runs no repository code.";

export interface BuiltinAgentOptions {
  readonly manager: WorkspaceManager;
  /** The threads it works on (default: one pool shared by the built-in agents made without one). */
  readonly threads?: BuiltinThreadPool;
}

export function createFormatterAgent(opts: BuiltinAgentOptions): LocalAgent {
  return {
    id: 'formatter',
    name: 'Formatter (Prettier)',
    description:
      "Formats files with Prettier using your repository's Prettier settings and returns the result as a patch. Needs no model; works offline.",
    kind: 'builtin',
    // It only ever proposes a patch from its own throwaway copy; it runs nothing and reaches nothing.
    maxCapabilities: { write: true, shell: false, network: false },
    skills: [
      {
        id: 'format',
        name: 'Format files',
        description:
          'Prettier over JS, TS, JSON, CSS, Markdown, YAML and HTML files. Scope: the files and folders sent as context; else the paths and globs the task names ("src/", "src/**/*.ts", "*.css", "except config/"); else the whole repository. The first step says which; a named path that matches nothing is said, and the run fails if none matches.',
        tags: ['format', 'prettier', 'patch'],
        examples: [
          'Format the files under src/',
          'Format src/**/*.ts except src/generated/',
          'Format the whole repository',
        ],
      },
    ],
    workspaces: opts.manager,
    run: (request, emit) => runFormatter(opts, request, emit),
  };
}

function runFormatter(opts: BuiltinAgentOptions, request: LocalRunRequest, emit: (e: LocalRunEvent) => void) {
  const pool = opts.threads ?? sharedThreadPool();
  return runInWorkspace(request, emit, {
    manager: opts.manager,
    describe: async () => ({ confined: false, detail: BUILTIN_DETAIL }),
    work: (ws) =>
      onThread<FormatApi>(pool, 'format', request, emit, 'formatting', async (thread) => {
        const supported = await thread.call('supported');
        const extensions = new Set(supported.extensions);
        const filenames = new Set(supported.filenames);
        const supports = (p: string) =>
          filenames.has(posix.basename(p)) || extensions.has(posix.extname(p).toLowerCase());
        const target = await targetFiles(ws, {
          requested: request.files,
          task: request.task ?? request.prompt,
          roots: request.repoPath ? [request.repoPath] : [],
          supports,
          ignoreFile: '.prettierignore',
        });
        const { files, skipped } = target;
        announceScope(target, emit);
        if (target.failure) return { outcome: 'failed', reason: target.failure };
        const configs = new ConfigFinder(ws, emit);
        let changed = 0;
        let failed = 0;
        for (const rel of files) {
          if (interrupted(request.deadline, request.signal)) return stoppedWork(request, 'formatting');
          const text = await readWorkspaceFile(ws, rel);
          const res = await thread.call('format', text, await configs.optionsFor(rel), rel);
          if ('error' in res) {
            failed++;
            emit({ kind: 'log', stream: 'stderr', text: `Could not format ${rel}: ${firstLine(res.error)}` });
            continue;
          }
          if (res.output !== text) {
            await writeWorkspaceFile(ws, rel, res.output);
            changed++;
            emit({ kind: 'step', text: `Formatted ${rel}` });
          }
        }
        const summary = `Prettier formatted ${changed} of ${files.length} file(s)${failed ? `; ${failed} could not be parsed` : ''}${skipped.length ? `; skipped ${skipped.length}` : ''}.`;
        return { outcome: 'completed', exitCode: 0, summary };
      }),
  });
}

const JSON_CONFIGS = ['.prettierrc', '.prettierrc.json', '.prettierrc.yaml', '.prettierrc.yml'];
const CODE_CONFIGS = [
  '.prettierrc.js',
  '.prettierrc.cjs',
  '.prettierrc.mjs',
  '.prettierrc.ts',
  'prettier.config.js',
  'prettier.config.cjs',
  'prettier.config.mjs',
  'prettier.config.ts',
  '.prettierrc.toml',
  '.prettierrc.json5',
];

/** Finds the nearest Prettier config (as Prettier does, from the file's folder up to the repository root). */
class ConfigFinder {
  private readonly cache = new Map<string, Promise<Options>>();
  private readonly warned = new Set<string>();
  constructor(
    private readonly ws: Workspace,
    private readonly emit: (e: LocalRunEvent) => void,
  ) {}

  optionsFor(rel: string): Promise<Options> {
    return this.forDir(posix.dirname(rel));
  }

  private forDir(dir: string): Promise<Options> {
    let p = this.cache.get(dir);
    if (!p) {
      p = this.load(dir);
      this.cache.set(dir, p);
    }
    return p;
  }

  private async load(dir: string): Promise<Options> {
    const abs = dir === '.' ? this.ws.dir : join(this.ws.dir, dir);
    for (const name of JSON_CONFIGS) {
      const text = await readFile(join(abs, name), 'utf8').catch(() => undefined);
      if (text === undefined) continue;
      const parsed = parseConfig(text);
      if (parsed) return parsed;
      this.warn(`${posix.join(dir, name)} is not JSON or simple YAML; Prettier's defaults were used.`);
      return {};
    }
    const pkg = await readFile(join(abs, 'package.json'), 'utf8').catch(() => undefined);
    if (pkg !== undefined) {
      try {
        const cfg = (JSON.parse(pkg) as { prettier?: unknown }).prettier;
        if (cfg && typeof cfg === 'object') return stripOverrides(cfg as Options);
      } catch {
        // not JSON: not a config
      }
    }
    for (const name of CODE_CONFIGS) {
      if (
        await readFile(join(abs, name)).then(
          () => true,
          () => false,
        )
      ) {
        this.warn(
          `${posix.join(dir, name)} was not loaded: Baton never runs repository code. Prettier's defaults were used.`,
        );
        return {};
      }
    }
    if (dir === '.' || dir === '') return {};
    return this.forDir(posix.dirname(dir));
  }

  private warn(text: string): void {
    if (this.warned.has(text)) return;
    this.warned.add(text);
    this.emit({ kind: 'step', text });
  }
}

function parseConfig(text: string): Options | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? stripOverrides(v as Options) : undefined;
  } catch {
    // Simple YAML: `key: value` lines only.
    const out: Record<string, unknown> = {};
    for (const line of text.split('\n')) {
      const t = line.replace(/#.*$/, '').trim();
      if (!t) continue;
      const m = /^([A-Za-z]+)\s*:\s*(.+)$/.exec(t);
      if (!m) return undefined;
      const raw = m[2].trim().replace(/^["'](.*)["']$/, '$1');
      out[m[1]] = raw === 'true' ? true : raw === 'false' ? false : /^\d+$/.test(raw) ? Number(raw) : raw;
    }
    return stripOverrides(out as Options);
  }
}

function stripOverrides(cfg: Options & { overrides?: unknown; plugins?: unknown }): Options {
  // Plugins named in a config would be loaded from the repository: never.
  const { overrides: _o, plugins: _p, ...rest } = cfg;
  return rest;
}

function firstLine(s: string): string {
  return s.split('\n')[0].slice(0, 300);
}
