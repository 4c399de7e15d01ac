import { Client, Connection } from '@temporalio/client';
import { TemporalCredentials } from '../workers/temporal-credentials';
import type { ClientSettings } from './settings';
import { UnavailableError } from './errors';

// One Temporal connection for the library: address, namespace, TLS and API key from the settings. The certificate and
// API key files are followed while the connection is open (workers/temporal-credentials.ts).

export interface KeelsonContext {
  client: Client;
  connection: Connection;
  credentials: TemporalCredentials;
  cluster: string;
  taskQueue: string;
  namespace: string;
  uiUrl: string;
}

const logToStderr = (line: string): void => void process.stderr.write(`keelson: ${line}\n`);

export async function connect(settings: ClientSettings, log = logToStderr): Promise<KeelsonContext> {
  const credentials = await TemporalCredentials.load(settings, log);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...credentials.clientOptions(), connectTimeout: '10s' });
  } catch (err) {
    throw new UnavailableError(
      `cannot reach Temporal at ${settings.TEMPORAL_ADDRESS}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  await credentials.watch();
  return {
    client: new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE }),
    connection,
    credentials,
    cluster: settings.KEELSON_CLUSTER,
    taskQueue: settings.KEELSON_TASK_QUEUE,
    namespace: settings.TEMPORAL_NAMESPACE,
    uiUrl: settings.TEMPORAL_UI_URL,
  };
}
