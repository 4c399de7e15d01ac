import fs from 'node:fs';
import path from 'node:path';
import { searchAttributeKeys } from '../../workflows/search-attributes';
import { logFile, portOpen, runningPid, startDetached, stopDetached, waitFor } from './processes';
import { stateDir, toolPaths } from './paths';

export const temporalPort = Number(process.env.KEELSON_TEMPORAL_PORT ?? 7233);
export const temporalUiPort = Number(process.env.KEELSON_TEMPORAL_UI_PORT ?? 8233);
export const temporalAddress = `127.0.0.1:${temporalPort}`;
export const temporalUiUrl = `http://127.0.0.1:${temporalUiPort}`;

const typeNames = {
  KEYWORD: 'Keyword',
  KEYWORD_LIST: 'KeywordList',
  TEXT: 'Text',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
};

/**
 * Arguments of `temporal server start-dev` on 127.0.0.1 with Keelson's search attributes and a SQLite file;
 * headless unless a UI port is given.
 */
export function devServerArgs(o: { port: number; dbFile: string; uiPort?: number }): string[] {
  return [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(o.port),
    ...(o.uiPort === undefined ? ['--headless'] : ['--ui-port', String(o.uiPort), '--ui-disable-news-fetch']),
    '--db-filename',
    o.dbFile,
    '--log-level',
    'warn',
    ...searchAttributeKeys.flatMap((key) => ['--search-attribute', `${key.name}=${typeNames[key.type]}`]),
  ];
}

/** Starts the Temporal dev server (SQLite-persisted, Web UI, Keelson's search attributes) unless it is up. */
export async function startTemporal(log: (line: string) => void): Promise<void> {
  if (runningPid('temporal') !== undefined && (await portOpen(temporalPort))) {
    log(`temporal: already running on ${temporalAddress}`);
    return;
  }
  if (await portOpen(temporalPort)) {
    throw new Error(
      `port ${temporalPort} is taken by a process Keelson did not start; stop it or set KEELSON_TEMPORAL_PORT`,
    );
  }
  fs.mkdirSync(stateDir, { recursive: true });
  const args = devServerArgs({
    port: temporalPort,
    uiPort: temporalUiPort,
    dbFile: path.join(stateDir, 'temporal.db'),
  });
  startDetached('temporal', toolPaths().temporal, args);
  await waitFor('temporal dev server', () => portOpen(temporalPort), 60_000, logFile('temporal'));
  await waitFor('temporal web UI', () => portOpen(temporalUiPort), 30_000, logFile('temporal'));
  log(`temporal: dev server on ${temporalAddress}, web UI on ${temporalUiUrl}`);
}

export async function stopTemporal(): Promise<boolean> {
  return stopDetached('temporal');
}
