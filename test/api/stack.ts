import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { AccessLogEntry } from '../../api/access-log';
import { clusterAccess } from '../../api/cluster';
import { ApiSettingsSchema } from '../../api/settings';
import { KeelsonClient } from '../../client';
import { unnamedToken, type ApiToken } from '../../model/access';
import { imagePolicyOf } from '../../workers/image-policy-settings';
import { startInProcessWorker } from '../../harness/in-process-worker';
import { installTestRuntime } from '../../harness/runtime';
import { kubeClients, testNamespace } from '../../harness/kube';
import { serveTestApi } from '../../harness/test-api';
import { keelsonNames, testWorkerSettings } from '../../harness/worker-settings';

// One test file's own Keelson: a real worker (the real workflows and Kubernetes activities) on a task queue and
// cluster name of its own, the real API on a free port, against the local stack's Temporal server and cluster.

export interface TestKeelson {
  url: string;
  token: string;
  cluster: string;
  taskQueue: string;
  namespace: string;
  keelson: KeelsonClient;
  temporal: Client;
  app: FastifyInstance;
  /** Every access-log entry the API wrote, oldest first. */
  accessLog: AccessLogEntry[];
  stop(): Promise<void>;
}

export const TOKEN = 'test-token-0123456789abcdef';
/** Named tokens of one scope each, beside the unnamed TOKEN (every scope). */
export const SCOPED: Record<'reader' | 'operator' | 'deployer' | 'prometheus', ApiToken> = {
  reader: { name: 'reader', scopes: ['read'], token: 'reader-token-0123456789' },
  operator: { name: 'operator', scopes: ['operate'], token: 'operator-token-0123456789' },
  deployer: { name: 'deployer', scopes: ['deploy'], token: 'deployer-token-0123456789' },
  prometheus: { name: 'prometheus', scopes: ['metrics'], token: 'prometheus-token-0123456789' },
};

/**
 * With `worker: false`, only the API (requests that need no workflow progress: auth, validation, documents).
 * `policy` holds image-policy settings (KEELSON_IMAGE_*, KEELSON_ENV_SECRET_ALLOWLIST) given to the worker and the API.
 */
export async function startTestKeelson(
  prefix: string,
  opts: { worker?: boolean; policy?: Record<string, string> } = {},
): Promise<TestKeelson> {
  installTestRuntime();
  const { kc, core } = kubeClients();
  const names = keelsonNames(`${prefix}-${Date.now().toString(36)}`, await testNamespace(core, prefix));
  const { cluster, taskQueue, namespace } = names;
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const temporal = new Client({ connection: await Connection.connect({ address }) });
  // The worker's own start-up path (workers/worker.ts), sized for tests: short pull grace, 1 s polls.
  const worker =
    opts.worker === false
      ? undefined
      : await startInProcessWorker({ ...testWorkerSettings(names, '127.0.0.1:0'), ...opts.policy });
  const apiSettings = ApiSettingsSchema.parse({
    TEMPORAL_ADDRESS: address,
    // The stack's UI (global setup sets it), so links point where the UI really is when ports are moved.
    TEMPORAL_UI_URL: process.env.TEMPORAL_UI_URL,
    KEELSON_CLUSTER: cluster,
    KEELSON_TASK_QUEUE: taskQueue,
    KEELSON_API_TOKEN: TOKEN,
    ...opts.policy,
  });
  const keelson = await KeelsonClient.connect(apiSettings);
  const accessLog: AccessLogEntry[] = [];
  const { app, url } = await serveTestApi({
    keelson,
    cluster: clusterAccess(kc, namespace),
    tokens: [unnamedToken(TOKEN), ...Object.values(SCOPED)],
    bodyLimitBytes: 64 * 1024,
    accessLog: (entry) => accessLog.push(entry),
    imagePolicy: imagePolicyOf(apiSettings),
  });
  return {
    url,
    token: TOKEN,
    cluster,
    taskQueue,
    namespace,
    keelson,
    temporal,
    app,
    accessLog,
    async stop() {
      await app.close();
      // Rollouts this file started are cancelled so their node workflows forget them.
      for (const r of await keelson.listRollouts().catch(() => []))
        await keelson.deleteRollout(r.name).catch(() => undefined);
      await worker?.stop();
      await keelson.close();
      await temporal.connection.close();
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}

export { eventually } from '../../harness/wait';
