import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  decodeWriteOrder,
  encodeNodeState,
  encodeWriteOrder,
  nodeMetadataKeys,
  writtenAfter,
  type NodeState,
  type NodeWriteOrder,
  type RolloutKind,
} from '../model';
import { metadataPrefix } from '../model/manifests/rollout-spec';
import type { NodeFacts, RolloutRef, WriteNodeStateInput } from './contract';
import { jsonPatch, pointer, strategicPatch, type Clients } from './clients';
import { classifyKubeError, kube, kubeCode } from './kube-errors';
import { nodeFacts, readNodeObject } from './nodes';
import { FAILURE_TYPES } from '../model/failure-types';

// Node state (G1): the whole nodeState_<rollout> value written as ONE JSON Patch that first tests the annotation
// still holds what Keelson last wrote (or is absent on the first write), then replaces it, with the status
// annotation and label, and the write's order (model/node-write-order.ts). No resourceVersion precondition: kubelet
// status updates move it constantly. A failed test under a higher order on the Node means this write is a stale copy
// (a local write run again on replay after a later one landed, or a stalled attempt): it writes nothing. Otherwise
// another writer changed Keelson's state: reported as ForeignNodeStateWrite, never merged.

export function keyPrefix(kind: RolloutKind, configured: string | undefined): string {
  return configured ?? metadataPrefix(kind);
}

type Op = { op: 'test' | 'add' | 'replace'; path: string; value: unknown };

function conditions(keys: ReturnType<typeof nodeMetadataKeys>, state: NodeState, status: string) {
  const now = new Date().toISOString();
  const erroring = Object.values(state).some((e) => e.state === 'erroring' || e.state === 'unknown');
  const complete = status === 'complete';
  return [
    {
      type: keys.notReadyCondition,
      status: complete ? 'False' : 'True',
      reason: complete ? 'Complete' : 'Incomplete',
      message: `rollout ${complete ? 'complete' : 'incomplete'} on this node`,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    },
    {
      type: keys.erroringCondition,
      status: erroring ? 'True' : 'False',
      reason: erroring ? 'Erroring' : 'NotErroring',
      message: erroring ? 'Package(s) Erroring or Unknown' : 'Not Erroring',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    },
  ];
}

/** A first write's reads of the Node for its maps, each after a patch that found a map added since the last. */
const MAP_READS = 3;

export async function writeNodeState(
  clients: Clients,
  configuredPrefix: string | undefined,
  input: WriteNodeStateInput,
  /** How many times this write has read the Node for its maps first: only after one that took them to exist failed. */
  mapsRead = 0,
): Promise<{ written: string; newerOnNode?: NodeWriteOrder }> {
  const keys = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, configuredPrefix));
  const written = encodeNodeState(input.state);
  const annotation = (key: string) => `/metadata/annotations/${pointer(key)}`;
  const ops: Op[] = [];
  if (input.previous === null) {
    // First write: the key must be absent (a JSON Patch test against null passes only for a missing member). Nodes
    // have labels and annotations (the kubelet's, the TTL controller's), so the Node is not read for them first: a
    // Node without either fails the patch, and the write goes again with them added.
    if (mapsRead > 0) {
      // A map added meanwhile (the TTL controller's annotation) fails the test instead of being replaced by `{}`.
      const node = await readNodeObject(clients, input.node);
      for (const map of ['annotations', 'labels'] as const) {
        if (node.metadata?.[map]) continue;
        ops.push({ op: 'test', path: `/metadata/${map}`, value: null });
        ops.push({ op: 'add', path: `/metadata/${map}`, value: {} });
      }
    }
    ops.push({ op: 'test', path: annotation(keys.nodeState), value: null });
    ops.push({ op: 'add', path: annotation(keys.nodeState), value: written });
  } else {
    ops.push({ op: 'test', path: annotation(keys.nodeState), value: input.previous });
    ops.push({ op: 'replace', path: annotation(keys.nodeState), value: written });
  }
  // A stalled attempt whose state the Node holds again (a write that changed only the status) would still put back
  // an older status and order: the order it replaces is tested too, when the writer knows it.
  if (input.previousOrder) {
    ops.push({ op: 'test', path: annotation(keys.nodeStateOrder), value: encodeWriteOrder(input.previousOrder) });
  }
  ops.push({ op: 'add', path: annotation(keys.status), value: input.status });
  ops.push({ op: 'add', path: `/metadata/labels/${pointer(keys.status)}`, value: input.status });
  if (input.order) ops.push({ op: 'add', path: annotation(keys.nodeStateOrder), value: encodeWriteOrder(input.order) });
  let node: V1Node;
  try {
    node = await clients.core.patchNode({ name: input.node, body: ops }, jsonPatch);
  } catch (err) {
    // A failed test comes back as 422 Invalid (or 409) with no detail: the annotation itself tells what happened.
    const code = kubeCode(err);
    if (code !== 409 && code !== 422) throw classifyKubeError(err, 'patch', `node ${input.node}`);
    node = await readNodeObject(clients, input.node);
    const current = node.metadata?.annotations?.[keys.nodeState] ?? null;
    const onNode = decodeWriteOrder(node.metadata?.annotations?.[keys.nodeStateOrder]);
    if (current !== null && input.order && onNode && writtenAfter(onNode, input.order)) {
      // The Node holds a later write's state and conditions: going back to this one would take entries backwards.
      return { written: current, newerOnNode: onNode };
    }
    // current === previous: the state test passed. If the order test failed, under an order not above this write's,
    // what the writer knew of the order is out of date (an older Keelson's write): the state test alone decides.
    if (current === input.previous) {
      if (current === null && mapsRead === 0) return writeNodeState(clients, configuredPrefix, input, 1);
      if (input.previousOrder) {
        return writeNodeState(clients, configuredPrefix, { ...input, previousOrder: undefined }, mapsRead);
      }
      if (current === null && mapsRead < MAP_READS) {
        return writeNodeState(clients, configuredPrefix, input, mapsRead + 1);
      }
      throw classifyKubeError(err, 'patch', `node ${input.node}`);
    }
    // current === written: an activity retry after a write that landed.
    if (current !== written) {
      const found = current === null ? 'no value' : JSON.stringify(current.slice(0, 300));
      const expected = input.previous === null ? 'no value' : 'the value Keelson last wrote';
      throw ApplicationFailure.create({
        type: FAILURE_TYPES.foreignNodeStateWrite,
        nonRetryable: true,
        message: `node ${input.node}: annotation ${keys.nodeState} was changed by another writer (expected ${expected}, found ${found}); Keelson does not merge`,
        details: [{ node: input.node, annotation: keys.nodeState, found: current }],
      });
    }
  }
  // Conditions change only when the rollout completes or a package starts or stops erroring: most writes skip them.
  const wanted = conditions(keys, input.state, input.status);
  const have = node.status?.conditions ?? [];
  const same = wanted.every((c) =>
    have.some((h) => h.type === c.type && h.status === c.status && h.reason === c.reason),
  );
  if (!same) {
    await kube('patch', `node ${input.node} status`, () =>
      clients.core.patchNodeStatus({ name: input.node, body: { status: { conditions: wanted } } }, strategicPatch),
    );
  }
  return { written };
}

export async function clearNodeState(
  clients: Clients,
  configuredPrefix: string | undefined,
  input: RolloutRef & { node: string },
): Promise<void> {
  const keys = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, configuredPrefix));
  const gone = (key: string) => ({ [key]: null });
  await kube('patch', `node ${input.node}`, () =>
    clients.core.patchNode(
      {
        name: input.node,
        body: {
          metadata: {
            annotations: { ...gone(keys.nodeState), ...gone(keys.nodeStateOrder), ...gone(keys.status) },
            labels: gone(keys.status),
          },
        },
      },
      strategicPatch,
    ),
  );
  const conditions = [keys.notReadyCondition, keys.erroringCondition].map((type) => ({ type, $patch: 'delete' }));
  await kube('patch', `node ${input.node} status`, () =>
    clients.core.patchNodeStatus({ name: input.node, body: { status: { conditions } } }, strategicPatch),
  );
}

export async function readNode(
  clients: Clients,
  configuredPrefix: string | undefined,
  input: RolloutRef & { node: string },
): Promise<{ facts: NodeFacts; nodeState: string | null; nodeStateOrder?: NodeWriteOrder }> {
  const node = await readNodeObject(clients, input.node);
  const keys = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, configuredPrefix));
  const raw = node.metadata?.annotations?.[keys.nodeState];
  const order = decodeWriteOrder(node.metadata?.annotations?.[keys.nodeStateOrder]);
  return { facts: nodeFacts(node), nodeState: raw === undefined ? null : raw, ...(order && { nodeStateOrder: order }) };
}
