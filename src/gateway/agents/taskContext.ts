/**
 * The prompt a CLI receives: the user's task, then what Baton knows about the copy (files named,
 * notes such as unsaved editor files or a merge in progress, what the agent may do), then project
 * instructions the CLI would not read by itself (e.g. AGENTS.md for Claude Code).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HarnessSpec } from '../harness/harness';
import type { Workspace } from '../workspace/workspaceManager';
import type { Capabilities, LocalRunRequest } from './localAgent';

const MAX_INLINE = 32 * 1024;
const SHARED_INSTRUCTIONS = ['AGENTS.md'];

export async function buildTaskPrompt(
  request: LocalRunRequest,
  ws: Workspace,
  harness: Pick<HarnessSpec, 'name' | 'readsInstructions'>,
  caps: Capabilities,
): Promise<string> {
  const lines: string[] = [request.prompt.trim(), '', '---', 'Context from Baton:'];
  lines.push(
    ws.kind === 'clone'
      ? `- You are working in a throwaway copy of the user's repository. Only the files you leave in this folder count: they go back to the user as a patch to review. Commits, branches, stashes and pushes are discarded.`
      : `- You are working in an empty scratch folder. Files you leave here go back to the user as a patch to review.`,
  );
  if (request.files.length) lines.push(`- Files the user named: ${request.files.join(', ')}`);
  for (const note of ws.notes) lines.push(`- ${note}`);
  lines.push(
    `- You may ${caps.write ? '' : 'not '}edit files, may ${caps.shell ? '' : 'not '}run shell commands, and may ${caps.network ? '' : 'not '}use the network.`,
  );
  const inline = await instructionsToInline(ws.dir, harness.readsInstructions);
  if (inline) {
    lines.push(
      '',
      `Project instructions from ${inline.file} (${harness.name} does not read this file by itself):`,
      '',
      inline.text,
    );
  }
  return lines.join('\n') + '\n';
}

async function instructionsToInline(
  dir: string,
  readsItself: readonly string[],
): Promise<{ file: string; text: string } | undefined> {
  for (const own of readsItself) {
    if (
      await readFile(join(dir, own), 'utf8').then(
        () => true,
        () => false,
      )
    )
      return undefined;
  }
  for (const file of SHARED_INSTRUCTIONS) {
    if (readsItself.includes(file)) continue;
    const text = await readFile(join(dir, file), 'utf8').catch(() => undefined);
    if (text !== undefined)
      return {
        file,
        text: text.length > MAX_INLINE ? `${text.slice(0, MAX_INLINE)}\n[… cut at ${MAX_INLINE >> 10} KiB]` : text,
      };
  }
  return undefined;
}
