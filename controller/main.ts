import { connect } from '../client/connect';
import { startController } from './controller';
import { loadControllerSettings } from './settings';
import { KeepAliveKubeConfig } from '../workers/kube-config';

// `node dist/controller/main.js`: custom-resource mode's controller (docs/migration.md). Kubernetes access from the
// pod's ServiceAccount or KUBECONFIG; Temporal settings as the API's.

async function main(): Promise<void> {
  const settings = loadControllerSettings();
  const kc = new KeepAliveKubeConfig();
  kc.loadFromDefault();
  const keelson = await connect(settings, (line) => console.error(`keelson controller: ${line}`));
  const controller = await startController({
    kc,
    keelson,
    selector: settings.KEELSON_CONTROLLER_SELECTOR,
    resyncMs: settings.KEELSON_CONTROLLER_RESYNC_SECONDS * 1000,
    log: (line) => console.error(line),
  });
  console.error(
    `keelson controller: watching Skyhook and NodeWright resources for cluster ${settings.KEELSON_CLUSTER}`,
  );
  const shutdown = () => {
    keelson.credentials.close();
    void controller
      .stop()
      .then(() => keelson.connection.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(`keelson controller: stopping: ${err instanceof Error ? err.message : String(err)}`);
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
