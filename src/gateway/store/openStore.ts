/** Opens the store a gateway was configured with. */
import { join } from 'node:path';
import type { StoreConfig } from '../config';
import type { GatewayStore } from './gatewayStore';
import { SqliteWorkerStore } from './sqliteWorkerStore';

export async function openStore(
  cfg: StoreConfig,
  stateDir: string,
  driver?: 'auto' | 'node:sqlite' | 'better-sqlite3',
  log?: (line: string) => void,
): Promise<GatewayStore> {
  if (cfg.kind === 'postgres') {
    const { PostgresGatewayStore } = await import('./postgresStore');
    return PostgresGatewayStore.open(cfg.url, log, undefined, cfg.listenUrl);
  }
  return SqliteWorkerStore.open({ file: cfg.file ?? join(stateDir, 'gateway.db'), driver: driver ?? 'auto' }, log);
}
