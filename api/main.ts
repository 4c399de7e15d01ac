import { imagePolicyOf } from '../workers/image-policy-settings';
import { SettingsError } from '../workers/temporal-settings';
import { KeelsonClient } from '../client';
import { jsonLines } from './access-log';
import { loadTokens } from './auth';
import { clusterAccessFrom } from './cluster';
import { buildApi } from './server';
import { loadApiSettings } from './settings';

// The Keelson API server: settings from the environment (one zod schema, ./settings.ts), then Fastify on
// KEELSON_API_HOST:KEELSON_API_PORT, the access log on stdout (a JSON line a request), Kubernetes from KUBECONFIG or
// the pod's ServiceAccount. Exit 1 with a message naming the setting when a setting is bad.

async function main(): Promise<void> {
  const settings = loadApiSettings();
  const tokens = loadTokens(settings);
  const keelson = await KeelsonClient.connect(settings);
  const app = await buildApi({
    keelson,
    cluster: clusterAccessFrom(settings),
    tokens,
    bodyLimitBytes: settings.KEELSON_API_BODY_LIMIT_BYTES,
    accessLog: jsonLines((line) => process.stdout.write(line)),
    imagePolicy: imagePolicyOf(settings),
  });
  const address = await app.listen({ host: settings.KEELSON_API_HOST, port: settings.KEELSON_API_PORT });
  process.stderr.write(
    `keelson api: listening on ${address} (cluster ${settings.KEELSON_CLUSTER}, task queue ${settings.KEELSON_TASK_QUEUE}, ` +
      `Temporal ${settings.TEMPORAL_ADDRESS})\n`,
  );
  const stop = () => {
    void app
      .close()
      .then(() => keelson.close())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`keelson api: ${message}\n`);
  process.exit(err instanceof SettingsError ? 2 : 1);
});
