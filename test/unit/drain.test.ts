import {
  classifyDrainPod,
  drainBlockedMessage,
  drainRules,
  drainTimeoutSeconds,
  parseRolloutDocuments,
  type DrainPod,
} from '../../model';

// kubectl drain's default rules over the pods of a node, and the rollout's spec.drain options that relax them.

const controlled = (extra: DrainPod = {}): DrainPod => ({
  metadata: { ownerReferences: [{ kind: 'ReplicaSet', controller: true }] },
  status: { phase: 'Running' },
  ...extra,
});
const bare: DrainPod = { status: { phase: 'Running' } };
const withEmptyDir = controlled({ spec: { volumes: [{}, { emptyDir: {} }] } });
const kubectl = drainRules(undefined);

describe('classifyDrainPod', () => {
  test("kubectl's defaults: a controlled pod is evicted, a bare pod and emptyDir data block, naming the option", () => {
    expect(kubectl).toEqual({ force: false, deleteEmptyDirData: false });
    expect(classifyDrainPod(controlled(), kubectl)).toEqual({ action: 'evict' });
    expect(classifyDrainPod(bare, kubectl)).toEqual({
      action: 'block',
      why: 'no controller would recreate it',
      allowedBy: 'force',
    });
    // An owner that is not the controller (a mere reference) does not make a pod managed.
    const ownedOnly = { ...bare, metadata: { ownerReferences: [{ kind: 'ConfigMap' }] } };
    expect(classifyDrainPod(ownedOnly, kubectl)).toMatchObject({ action: 'block', allowedBy: 'force' });
    expect(classifyDrainPod(withEmptyDir, kubectl)).toEqual({
      action: 'block',
      why: 'its emptyDir data would be lost',
      allowedBy: 'deleteEmptyDirData',
    });
  });

  test('DaemonSet, mirror and finished pods are skipped, whatever blocks them otherwise', () => {
    const ds = { metadata: { ownerReferences: [{ kind: 'DaemonSet', controller: true }] }, spec: withEmptyDir.spec };
    expect(classifyDrainPod(ds, kubectl)).toEqual({ action: 'skip', why: 'daemonset' });
    const mirror = { ...bare, metadata: { annotations: { 'kubernetes.io/config.mirror': 'abc' } } };
    expect(classifyDrainPod(mirror, kubectl)).toEqual({ action: 'skip', why: 'mirror' });
    for (const phase of ['Succeeded', 'Failed']) {
      expect(classifyDrainPod({ status: { phase } }, kubectl)).toEqual({ action: 'skip', why: 'finished' });
    }
  });

  test('force lets bare pods go, deleteEmptyDirData lets emptyDir pods go; a bare emptyDir pod needs both', () => {
    const force = drainRules({ force: true });
    const emptyDir = drainRules({ deleteEmptyDirData: true });
    const both = drainRules({ force: true, deleteEmptyDirData: true });
    expect(classifyDrainPod(bare, force)).toEqual({ action: 'evict' });
    expect(classifyDrainPod(withEmptyDir, emptyDir)).toEqual({ action: 'evict' });
    const bareEmptyDir = { ...bare, spec: withEmptyDir.spec };
    expect(classifyDrainPod(bareEmptyDir, force)).toMatchObject({ action: 'block', allowedBy: 'deleteEmptyDirData' });
    expect(classifyDrainPod(bareEmptyDir, emptyDir)).toMatchObject({ action: 'block', allowedBy: 'force' });
    expect(classifyDrainPod(bareEmptyDir, both)).toEqual({ action: 'evict' });
  });

  test('the blocked message names each pod, why, and the option that allows it', () => {
    expect(
      drainBlockedMessage('node-1', [
        { pod: 'apps/solo', why: 'no controller would recreate it', allowedBy: 'force' },
        { pod: 'apps/cache-0', why: 'its emptyDir data would be lost', allowedBy: 'deleteEmptyDirData' },
      ]),
    ).toBe(
      'drain of node node-1 is blocked by 2 pod(s): apps/solo (no controller would recreate it; allowed by ' +
        'drain.force: true), apps/cache-0 (its emptyDir data would be lost; allowed by drain.deleteEmptyDirData: ' +
        "true); set the option in the rollout's spec.drain to evict them",
    );
  });
});

describe('spec.drain', () => {
  const skyhook = (spec: Record<string, unknown>) => ({
    apiVersion: 'skyhook.nvidia.com/v1alpha1',
    kind: 'Skyhook',
    metadata: { name: 'demo' },
    spec,
  });

  test('accepted with its options; unset, the spec has no drain field and the worker timeout applies', () => {
    const drain = { timeout: '15m', force: true, deleteEmptyDirData: true, gracePeriodSeconds: 30 };
    const { rollouts, errors } = parseRolloutDocuments([skyhook({ drain })]);
    expect(errors).toEqual([]);
    expect(rollouts[0]!.spec.drain).toEqual(drain);
    expect(drainTimeoutSeconds(drain, 600)).toBe(900);
    expect(drainRules(drain)).toEqual({ force: true, deleteEmptyDirData: true, gracePeriodSeconds: 30 });
    const plain = parseRolloutDocuments([skyhook({})]).rollouts[0]!;
    expect('drain' in plain.spec).toBe(false);
    expect(drainTimeoutSeconds(plain.spec.drain, 600)).toBe(600);
  });

  test('a bad option is refused, naming the field, the value and what is allowed', () => {
    const errorsOf = (drain: unknown) => parseRolloutDocuments([skyhook({ drain })]).errors;
    expect(errorsOf({ timeout: '5s' })).toEqual([
      expect.objectContaining({
        path: 'Skyhook/demo.spec.drain.timeout',
        message: expect.stringContaining('"5s" is not a drain timeout (a duration of whole seconds from 10s to 24h'),
      }),
    ]);
    expect(errorsOf({ gracePeriodSeconds: -1 })).toEqual([
      expect.objectContaining({ path: expect.stringContaining('spec.drain.gracePeriodSeconds') }),
    ]);
    expect(errorsOf({ ignoreDaemonSets: false })).toEqual([
      {
        path: 'Skyhook/demo.spec.drain.ignoreDaemonSets',
        message: 'unknown field; the fields here are timeout, force, deleteEmptyDirData, gracePeriodSeconds',
      },
    ]);
  });
});
