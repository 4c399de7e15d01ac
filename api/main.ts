import type { Server as TlsServer } from 'node:tls';
import { imagePolicyOf } from '../workers/image-policy-settings';
import { SettingsError } from '../workers/temporal-settings';
import { KeelsonClient } from '../client';
import { jsonLines } from './access-log';
import { loadTokens } from './auth';
import { clusterAccessFrom } from './cluster';
import { reloadCredentials } from './credential-reload';
import { buildApi } from './server';
import { loadApiSettings } from './settings';
import { readApiTls } from './tls';

// The Keelson API server: settings from the environment (one zod schema, ./settings.ts), then Fastify on
// KEELSON_API_HOST:KEELSON_API_PORT (HTTPS when a certificate is given), the access log on stdout (a JSON line a
// request), Kubernetes from KUBECONFIG or the pod's ServiceAccount. Exit 1 with a message naming the setting when a
// setting is bad. The token file and TLS files are reloaded when they change (./credential-reload.ts).

const log = (line: string) => process.stderr.write(`keelson api: ${line}\n`);

async function main(): Promise<void> {
  const settings = loadApiSettings();
  let tokens = loadTokens(settings);
  const tls = readApiTls(settings);
  const keelson = await KeelsonClient.connect(settings, log);
  const app = await buildApi({
    keelson,
    cluster: clusterAccessFrom(settings),
    tokens: () => tokens,
    ...(tls && { tls }),
    bodyLimitBytes: settings.KEELSON_API_BODY_LIMIT_BYTES,
    accessLog: jsonLines((line) => process.stdout.write(line)),
    imagePolicy: imagePolicyOf(settings),
  });
  const address = await app.listen({ host: settings.KEELSON_API_HOST, port: settings.KEELSON_API_PORT });
  const reloads = await reloadCredentials(settings, {
    setTokens: (next) => void (tokens = [...next]),
    ...(tls && { server: app.server as unknown as TlsServer }),
    log,
  });
  log(
    `listening on ${address} (cluster ${settings.KEELSON_CLUSTER}, task queue ${settings.KEELSON_TASK_QUEUE}, ` +
      `Temporal ${settings.TEMPORAL_ADDRESS})`,
  );
  const stop = () => {
    reloads.close();
    void app
      .close()
      .then(() => keelson.close())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  log(err instanceof Error ? err.message : String(err));
  process.exit(err instanceof SettingsError ? 2 : 1);
});
