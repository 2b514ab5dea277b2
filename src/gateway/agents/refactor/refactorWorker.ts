/**
 * The refactoring agent's thread (bundled as dist/gateway-refactor.js with the TypeScript compiler,
 * so the gateway neither loads nor parses TypeScript until the agent is first used). It answers the
 * agent's calls on one `ProjectService`, in order; the agent ends the thread to cancel at once.
 */
import { parentPort } from 'node:worker_threads';
import { ProjectService } from './languageService';
import type { WorkerCall, WorkerReply } from './workerClient';

let project: ProjectService | undefined;

function need(): ProjectService {
  if (!project) throw new Error('the project is not open');
  return project;
}

function handle(call: WorkerCall): unknown {
  switch (call.method) {
    case 'open': {
      const [root, files] = call.args;
      project = new ProjectService(root, files);
      return project.warmUp();
    }
    case 'declarationsOf':
      return need().declarationsOf(...call.args);
    case 'rename':
      return need().rename(...call.args);
    case 'organizeImports':
      return need().organizeImports(...call.args) ?? null;
    case 'fixesFor':
      return need().fixesFor(...call.args);
    case 'applyFix':
      return need().applyFix(...call.args);
  }
}

parentPort?.on('message', (call: WorkerCall) => {
  let reply: WorkerReply;
  try {
    reply = { id: call.id, ok: true, value: handle(call) };
  } catch (e) {
    reply = { id: call.id, ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort?.postMessage(reply);
});
