import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { KeelsonClient, loadClientSettings } from '../../client';
import { startController, type RunningController } from '../../controller/controller';
import type { RolloutResource } from '../../controller/resources';
import { installCustomResourceDefinitions } from '../../deploy/dev/custom-resources';
import { toolPaths } from '../../deploy/dev/paths';
import { stackEnv } from '../../deploy/dev/stack';
import type { Condition, RolloutResourceStatus } from '../../model/custom-resource/status';
import { API_GROUPS, API_VERSION, RESOURCE_PLURALS, type RolloutKind } from '../../model/wire';
import { eventually, type E2E } from './e2e-stack';

// Custom-resource mode driven as a user drives it, for the end-to-end files: kubectl against the local apiserver,
// the controller in this process (restartable, its log kept), resources read back through the apiserver.

const env = stackEnv();
const kubectlBin = path.join(toolPaths().kubeBin, 'kubectl');

export class ResourceDriver {
  custom!: CustomObjectsApi;
  keelson!: KeelsonClient;
  controller?: RunningController;
  readonly controllerLog: string[] = [];

  constructor(readonly e2e: E2E) {}

  /** Installs the definitions, starts this file's stack and the controller for its labelled resources. */
  async start(nodes: number): Promise<void> {
    installCustomResourceDefinitions(env.KUBECONFIG!);
    await this.e2e.start({ nodes });
    this.custom = this.e2e.kc.makeApiClient(CustomObjectsApi);
    this.keelson = await KeelsonClient.connect(
      loadClientSettings({
        TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS,
        KEELSON_CLUSTER: this.e2e.cluster,
        KEELSON_TASK_QUEUE: this.e2e.taskQueue,
      }),
    );
    await this.runController();
  }

  async runController(): Promise<void> {
    this.controller = await startController({
      kc: this.e2e.kc,
      keelson: this.keelson.ctx,
      selector: `keelson.dev/e2e=${this.e2e.cluster}`,
      resyncMs: 1_000,
      log: (line) => this.controllerLog.push(line),
    });
  }

  async stop(cleanup: { kind: RolloutKind; name: string }[]): Promise<void> {
    await this.controller?.stop();
    for (const r of cleanup) await this.custom?.deleteClusterCustomObject(where(r.kind, r.name)).catch(() => undefined);
    await this.keelson?.close();
    await this.e2e.stop();
    if (this.controllerLog.length > 0) console.log(`controller log:\n${this.controllerLog.join('\n')}`);
  }

  /** Asynchronous: the controller runs in this process, and `kubectl delete` waits on it to remove the finalizer. */
  async kubectl(args: string[], input?: string): Promise<string> {
    const run = promisify(execFile)(kubectlBin, args, { env: { ...process.env, KUBECONFIG: env.KUBECONFIG } });
    if (input !== undefined) run.child.stdin!.end(input);
    return (await run).stdout;
  }

  apply(manifest: Record<string, unknown>): Promise<string> {
    return this.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  }

  async resource(kind: RolloutKind, name: string): Promise<RolloutResource> {
    return (await this.custom.getClusterCustomObject(where(kind, name))) as RolloutResource;
  }

  /** Waits until the resource's `.status` matches, and returns it. */
  statusBecomes(kind: RolloutKind, name: string, what: string, expected: Record<string, unknown>) {
    return eventually(
      `${kind}/${name} .status ${what}`,
      async () => {
        const status = (await this.resource(kind, name)).status ?? {};
        expect(status).toMatchObject(expected);
        return status as RolloutResourceStatus;
      },
      120_000,
    );
  }

  /** Waits until the resource's condition matches, and returns it. */
  conditionBecomes(kind: RolloutKind, name: string, type: string, expected: Partial<Condition>): Promise<Condition> {
    return eventually(
      `${kind}/${name} condition ${type} ${JSON.stringify(expected)}`,
      async () => {
        const found = condition((await this.resource(kind, name)).status ?? {}, type);
        expect(found).toMatchObject(expected);
        return found!;
      },
      120_000,
    );
  }

  /** The lines the controller logged about this resource's name. */
  logged(name: string): string[] {
    return this.controllerLog.filter((line) => line.includes(`/${name}:`));
  }
}

export const condition = (status: RolloutResourceStatus, type: string) =>
  status.conditions?.find((c) => c.type === type);

export const where = (kind: RolloutKind, name: string) => ({
  group: API_GROUPS[kind],
  version: API_VERSION,
  plural: RESOURCE_PLURALS[kind],
  name,
});
