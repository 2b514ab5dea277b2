/**
 * The local agents this machine offers: the built-in agents (always) and one agent per coding CLI
 * found (a configured path or PATH). The gateway serves each at /a2a/<id>.
 */
import type { ConfineOptions } from '../confine';
import type { HarnessId } from '../harness/harness';
import { detectHarnesses } from '../harness/registry';
import { WorkspaceManager } from '../workspace/workspaceManager';
import { BuiltinThreadPool } from './builtinThreads';
import { createFormatterAgent } from './formatterAgent';
import { createHeadlessAgent } from './headlessAgent';
import type { LocalAgent } from './localAgent';
import { createLintFixAgent } from './lintFixAgent';
import { createRefactorAgent } from './refactorAgent';

export interface DiscoverOptions {
  /** Workspace root (default: workspace/workspaceRoot.ts); ignored when `manager` is given. */
  readonly workspaceRoot?: string;
  readonly manager?: WorkspaceManager;
  /** Configured CLI executables (machine-scoped settings), by harness id. */
  readonly cliPaths?: Partial<Record<HarnessId, string>>;
  /** PATH to search for CLIs (default process.env.PATH). */
  readonly pathVar?: string;
  /** Include the built-in agents: formatter, lint-fix, refactor (default true). */
  readonly builtins?: boolean;
  /**
   * Milliseconds the refactoring agent waits between its steps (default 0: none), so a person can
   * follow the steps and cancel on a small repository (the demo turns it on).
   */
  readonly agentPaceMs?: number;
  /**
   * How many built-in agent jobs run at once, each on a thread of its own (default: one less than the
   * cores, at least 1 and at most 2); more wait in a queue and say so.
   */
  readonly builtinThreads?: number;
  /** Include detected CLIs (default true). */
  readonly clis?: boolean;
  readonly confine?: ConfineOptions;
  readonly maxOutputBytes?: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly realHome?: string;
}

export async function discoverLocalAgents(opts: DiscoverOptions = {}): Promise<LocalAgent[]> {
  const manager = opts.manager ?? new WorkspaceManager({ root: opts.workspaceRoot, userHome: opts.realHome });
  const agents: LocalAgent[] = [];
  if (opts.builtins !== false) {
    // One pool for the three: the bound is on the machine's cores, not per agent.
    const threads = new BuiltinThreadPool(opts.builtinThreads);
    agents.push(
      createFormatterAgent({ manager, threads }),
      createLintFixAgent({ manager, threads }),
      createRefactorAgent({ manager, paceMs: opts.agentPaceMs, threads }),
    );
  }
  if (opts.clis !== false) {
    for (const detected of detectHarnesses({ paths: opts.cliPaths, pathVar: opts.pathVar })) {
      agents.push(
        createHeadlessAgent(detected, {
          manager,
          confine: opts.confine,
          maxOutputBytes: opts.maxOutputBytes,
          env: opts.env,
          realHome: opts.realHome,
        }),
      );
    }
  }
  return agents;
}
