/**
 * The refactoring agent's thread (bundled as dist/gateway-refactor.js with the TypeScript compiler,
 * so the gateway neither loads nor parses TypeScript until the agent is first used). It answers the
 * agent's calls on one `ProjectService`, in order; the agent ends the thread to cancel at once.
 */
import { serveThread } from '../threadServer';
import { ProjectService } from './languageService';
import type { WorkerApi } from './workerClient';

let project: ProjectService | undefined;

function need(): ProjectService {
  if (!project) throw new Error('the project is not open');
  return project;
}

const api: WorkerApi = {
  open(root, files) {
    project = new ProjectService(root, files);
    return project.warmUp();
  },
  declarationsOf: (...args) => need().declarationsOf(...args),
  rename: (...args) => need().rename(...args),
  organizeImports: (file) => need().organizeImports(file) ?? null,
  fixesFor: (...args) => need().fixesFor(...args),
  applyFix: (...args) => need().applyFix(...args),
};

serveThread(api);
