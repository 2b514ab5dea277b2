/**
 * The calls the refactoring agent's language-service thread answers (refactorWorker.ts): `open`,
 * then the project's own methods. The thread is one of the built-in agents' (builtinThreads.ts).
 */
import type { ProjectService } from './languageService';

export interface WorkerApi {
  open(root: string, files: readonly string[]): number;
  declarationsOf: ProjectService['declarationsOf'];
  rename: ProjectService['rename'];
  organizeImports(file: string): ReturnType<ProjectService['organizeImports']> | null;
  fixesFor: ProjectService['fixesFor'];
  applyFix: ProjectService['applyFix'];
}
