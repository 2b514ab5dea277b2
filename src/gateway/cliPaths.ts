/** Where the local gateway keeps its state: shared by `baton-gateway` and `baton`. */
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.BATON_STATE_DIR || join(homedir(), '.baton', 'gateway');
}
