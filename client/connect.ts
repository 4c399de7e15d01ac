import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { temporalConnectionOptions } from '../workers/temporal-settings';
import type { ClientSettings } from './settings';
import { UnavailableError } from './errors';

// One Temporal connection for the library: address, namespace, TLS and API key from the settings.

export interface KeelsonContext {
  client: Client;
  connection: Connection;
  cluster: string;
  taskQueue: string;
  namespace: string;
  uiUrl: string;
}

export function connectionOptions(s: ClientSettings): ConnectionOptions {
  return { ...temporalConnectionOptions(s), connectTimeout: '10s' };
}

export async function connect(settings: ClientSettings): Promise<KeelsonContext> {
  let connection: Connection;
  try {
    connection = await Connection.connect(connectionOptions(settings));
  } catch (err) {
    throw new UnavailableError(
      `cannot reach Temporal at ${settings.TEMPORAL_ADDRESS}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return {
    client: new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE }),
    connection,
    cluster: settings.KEELSON_CLUSTER,
    taskQueue: settings.KEELSON_TASK_QUEUE,
    namespace: settings.TEMPORAL_NAMESPACE,
    uiUrl: settings.TEMPORAL_UI_URL,
  };
}
