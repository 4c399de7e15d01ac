import type { KeelsonActivities } from './contract';
import { makeClients } from './clients';
import { cordon, removeTaint, uncordon } from './cordon';
import { drain } from './drain';
import { runInterrupt } from './interrupt';
import { listNodes } from './nodes';
import { ensureNodeWorkflow } from './node-workflows';
import { readNode, writeNodeState } from './node-state';
import { waitForProtectedPods } from './protected-pods';
import { waitForReboot } from './reboot';
import type { ActivityDeps } from './settings';
import { stageJobActivities } from './stage-jobs';

export type { ActivityDeps, ActivitySettings } from './settings';
export { DEFAULT_LEGACY_PREFIXES } from './settings';

/** The Kubernetes implementation of the activity contract, over the clients and settings it is given. */
export function createActivities(deps: ActivityDeps): KeelsonActivities {
  const clients = makeClients(deps.kubeConfig);
  const { settings } = deps;
  const w = { clients, settings };
  const prefix = settings.keyPrefix;
  return {
    ...stageJobActivities(w),
    runInterrupt: (input) => runInterrupt(w, input),
    writeNodeState: (input) => writeNodeState(clients, prefix, input),
    readNode: (input) => readNode(clients, prefix, input),
    cordon: (input) => cordon(clients, prefix, input),
    uncordon: (input) => uncordon(clients, prefix, input),
    waitForProtectedPods: (input) => waitForProtectedPods(clients, settings, input),
    drain: (input) => drain(clients, settings, input),
    waitForReboot: (input) => waitForReboot(clients, settings, input),
    removeTaint: (input) => removeTaint(clients, input),
    listNodes: ({ selector }) => listNodes(clients, selector),
    ensureNodeWorkflow: (input) => ensureNodeWorkflow(deps.temporal, settings.taskQueue, input),
  };
}
