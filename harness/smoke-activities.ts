import { BatchV1Api, KubeConfig, Watch, type V1Job } from '@kubernetes/client-node';

// Activities for the local-stack smoke test only: create a Job pinned to a fake node and watch it to its end.
export function createSmokeActivities(kc: KubeConfig) {
  const batch = kc.makeApiClient(BatchV1Api);
  return {
    async runJobToEnd(namespace: string, node: string, failStage?: string): Promise<string> {
      const name = `smoke-${node}-${Date.now().toString(36)}`;
      const job: V1Job = {
        metadata: { name, namespace },
        spec: {
          backoffLimit: 1,
          template: {
            metadata: { labels: { 'keelson.dev/stage': 'apply' } },
            spec: {
              nodeName: node,
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'stage',
                  image: 'registry.example/smoke:1.0.0',
                  env: [
                    { name: 'KEELSON_SIM_SECONDS', value: '1' },
                    ...(failStage ? [{ name: 'KEELSON_SIM_FAIL_STAGES', value: failStage }] : []),
                  ],
                },
              ],
            },
          },
        },
      };
      await batch.createNamespacedJob({ namespace, body: job });
      return new Promise<string>((resolve, reject) => {
        let controller: AbortController | undefined;
        new Watch(kc)
          .watch(
            `/apis/batch/v1/namespaces/${namespace}/jobs`,
            { fieldSelector: `metadata.name=${name}` },
            (_type, obj: V1Job) => {
              const done = obj.status?.conditions?.find(
                (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
              );
              if (done) {
                // Resolve before aborting: the abort makes the watch report an AbortError synchronously.
                resolve(done.type === 'Complete' ? 'Complete' : `Failed:${done.reason}`);
                controller?.abort();
              }
            },
            (err) => (err ? reject(err) : undefined),
          )
          .then((c) => (controller = c), reject);
      });
    },
  };
}

export type SmokeActivities = ReturnType<typeof createSmokeActivities>;
