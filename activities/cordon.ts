import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { nodeMetadataKeys } from '../model';
import { FAILURE_TYPES } from '../model/failure-types';
import type { RolloutRef } from './contract';
import { jsonPatch, pointer, type Clients } from './clients';
import { classifyKubeError, isNotFound, kubeCode } from './kube-errors';
import { keyPrefix } from './node-state';
import { readNodeObject } from './nodes';

// Cordon with an ownership annotation (`<prefix>cordon_<rollout>`, §4): "true" when Keelson set
// spec.unschedulable, "preexisting" when the node was already cordoned (by someone else, or by another rollout).
// Uncordon removes only Keelson's own cordon, and leaves the node unschedulable while another rollout still holds one. Every write is a
// JSON Patch whose tests make a concurrent change fail the patch, which is then re-read and retried.

export const OWN_CORDON = 'true';
export const PREEXISTING_CORDON = 'preexisting';

type Op = { op: 'test' | 'add' | 'remove' | 'replace'; path: string; value?: unknown };

const annotationPath = (key: string) => `/metadata/annotations/${pointer(key)}`;

/** Applies `plan(node)` (undefined: nothing to do) as a JSON Patch, re-reading and retrying on a failed test. */
async function patchWithTests(
  clients: Clients,
  name: string,
  plan: (node: Awaited<ReturnType<typeof readNodeObject>>) => Op[] | undefined,
): Promise<boolean> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const node = await readNodeObject(clients, name);
    const ops = plan(node);
    if (!ops) return false;
    try {
      await clients.core.patchNode({ name, body: ops }, jsonPatch);
      return true;
    } catch (err) {
      const code = kubeCode(err);
      if (code !== 409 && code !== 422) throw classifyKubeError(err, 'patch', `node ${name}`);
      if (attempt === 9) throw classifyKubeError(err, 'patch', `node ${name}`);
    }
  }
  return false;
}

function testUnschedulable(value: boolean | undefined): Op {
  // A missing spec.unschedulable tests as null.
  return { op: 'test', path: '/spec/unschedulable', value: value ?? null };
}

export async function cordon(
  clients: Clients,
  prefix: string | undefined,
  input: RolloutRef & { node: string },
): Promise<void> {
  const key = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, prefix)).cordon;
  await patchWithTests(clients, input.node, (node) => {
    const held = node.metadata?.annotations?.[key];
    const was = node.spec?.unschedulable;
    if (held !== undefined && was) return undefined; // already held
    const ops: Op[] = node.metadata?.annotations ? [] : [{ op: 'add', path: '/metadata/annotations', value: {} }];
    ops.push(testUnschedulable(was));
    if (held === undefined)
      ops.push({ op: 'add', path: annotationPath(key), value: was ? PREEXISTING_CORDON : OWN_CORDON });
    // Held, but the node was made schedulable since (by hand, or by an uncordon a crashed worker ran in a workflow task
    // that was lost): the cordon is this rollout's own now.
    else
      ops.push(
        { op: 'test', path: annotationPath(key), value: held },
        { op: 'replace', path: annotationPath(key), value: OWN_CORDON },
      );
    if (!was) ops.push({ op: 'add', path: '/spec/unschedulable', value: true });
    return ops;
  });
}

/** Whether the node is unschedulable under this rollout's cordon annotation (its own or one it found). */
export async function holdsCordon(
  clients: Clients,
  prefix: string | undefined,
  input: RolloutRef & { node: string },
): Promise<boolean> {
  return cordonHeld(await readNodeObject(clients, input.node), prefix, input);
}

/** Whether `node` is unschedulable under the rollout's cordon. */
export function cordonHeld(node: V1Node, prefix: string | undefined, input: RolloutRef): boolean {
  const key = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, prefix)).cordon;
  return node.spec?.unschedulable === true && node.metadata?.annotations?.[key] !== undefined;
}

/** The failure of a call that needs the rollout's cordon on a node that lost it: nothing was created. */
export function notCordoned(input: RolloutRef & { node: string }, what: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE_TYPES.notCordoned,
    nonRetryable: true,
    message: `node ${input.node} is not cordoned by rollout ${input.rollout}: ${what} does not run on a schedulable node`,
  });
}

/** True when this call made the node schedulable again. */
export async function uncordon(
  clients: Clients,
  prefix: string | undefined,
  input: RolloutRef & { node: string },
): Promise<boolean> {
  const key = nodeMetadataKeys(input.rollout, keyPrefix(input.kind, prefix)).cordon;
  let uncordoned = false;
  await patchWithTests(clients, input.node, (node) => {
    const annotations = node.metadata?.annotations ?? {};
    const held = annotations[key];
    if (held === undefined) return undefined;
    const ops: Op[] = [
      { op: 'test', path: annotationPath(key), value: held },
      { op: 'remove', path: annotationPath(key) },
    ];
    // Another rollout's Keelson cordon (any prefix) keeps the node cordoned until it lets go too. One that found the
    // node cordoned by this rollout was marked preexisting: it takes the ownership over, so the last to let go
    // uncordons.
    const others = Object.entries(annotations).filter(([k]) => k !== key && /\/cordon_/.test(k));
    if (held === OWN_CORDON && others.length > 0 && !others.some(([, v]) => v === OWN_CORDON)) {
      const [heir, value] = others[0]!;
      ops.push(
        { op: 'test', path: annotationPath(heir), value },
        { op: 'replace', path: annotationPath(heir), value: OWN_CORDON },
      );
    }
    uncordoned = held === OWN_CORDON && others.length === 0 && node.spec?.unschedulable === true;
    if (uncordoned) ops.push(testUnschedulable(true), { op: 'replace', path: '/spec/unschedulable', value: false });
    return ops;
  });
  return uncordoned;
}

export async function removeTaint(
  clients: Clients,
  input: { node: string; key: string; effect: string },
): Promise<void> {
  // A node deleted meanwhile took its taint with it: retrying would hold the rollout's passes up for good.
  await removeTaintOps(clients, input).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

function removeTaintOps(clients: Clients, input: { node: string; key: string; effect: string }): Promise<boolean> {
  return patchWithTests(clients, input.node, (node) => {
    const ops: Op[] = [];
    const taints = node.spec?.taints ?? [];
    // Highest index first, so each removal leaves the earlier indexes valid; the tests pin what sits there.
    for (let i = taints.length - 1; i >= 0; i--) {
      const t = taints[i]!;
      if (t.key !== input.key || t.effect !== input.effect) continue;
      ops.push(
        { op: 'test', path: `/spec/taints/${i}/key`, value: t.key },
        { op: 'test', path: `/spec/taints/${i}/effect`, value: t.effect },
        { op: 'remove', path: `/spec/taints/${i}` },
      );
    }
    return ops.length > 0 ? ops : undefined;
  });
}
