import { AdmissionregistrationV1Api, PatchStrategy, PolicyV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { standInController } from '../../harness/kube';
import { E2E, PREFIX, entry, eventually, isCordoned, sleep } from './e2e-stack';
import { LONG, NodeScenarios, bootId, manifest, suspended } from './node-scenarios';
import { nodeReady } from './timeline';

// G13 (a failed drain or reboot ends erroring with its reason and returns the permit; a rerun goes on) and G14 (pauses
// hold) on the real stack: the worker process, the kube-apiserver with kwok nodes and the simulator playing the agent,
// Temporal. Each test has a node of its own and a rollout on it alone; what happened is read from the watch record of
// every Job, Pod and Node (test/e2e/timeline.ts), the Node annotation and the CLI. The same scenarios with a fake
// cluster: test/workflows/node-failures.test.ts and node-pauses.test.ts. G11 and G12: interleavings.test.ts.

// G13 needs a drain that times out and a reboot that does not come back within the test's patience: the smallest
// timeouts the worker accepts, and the policy `fail` (its default, said here so the test does not depend on it).
const DRAIN_TIMEOUT = 10;
const REBOOT_TIMEOUT = 30;
const e2e = new E2E('fapa', {
  KEELSON_DRAIN_TIMEOUT_SECONDS: String(DRAIN_TIMEOUT),
  KEELSON_DRAIN_POLICY: 'fail',
  KEELSON_REBOOT_TIMEOUT_SECONDS: String(REBOOT_TIMEOUT),
});
const k = NodeScenarios.use(e2e, 4);

test.concurrent(
  'G14 a pause longer than the stage remaining time, then resume: the stage completes with the time it had left',
  async () => {
    const node = k.take(0);
    const name = 'pauselong';
    // A pod runs RUN seconds from its start (a resumed Job starts a new pod): the time left after the pause must hold one
    // whole run, and the suspension must come before the first pod ends. The pause is a CLI process away, and a running
    // stage's wait hears it at its next heartbeat to Temporal (up to 16 s): RUN is long enough for both.
    const TIMEOUT = 70;
    const RUN = 30;
    const doc = manifest({ name, nodes: [node], packages: { tools: { version: '1.0.0', simSeconds: RUN } } });
    doc.spec.stageTimeout = `${TIMEOUT}s`;
    const startedAt = Date.now();
    await e2e.start_(name, [doc]);
    const firstPod = await k.runningPod(node, 'tools@1.0.0:apply');
    const job = k.tl.jobsOn(node, 'tools@1.0.0:apply')[0]!;
    expect(job.last.spec?.activeDeadlineSeconds).toBe(TIMEOUT);
    // The stage uses some of its time, then the rollout is paused.
    await sleep(Math.max(0, firstPod.addedAt + 3_000 - Date.now()));
    const pausedAt = Date.now();
    await e2e.cliOk(['rollout', 'pause', name, '--reason', 'e2e: G14 long pause']);
    await eventually(
      'the apply Job suspended and its pod gone, or complete',
      async () => expect(k.tl.succeeded(job) || (suspended(job.last) && firstPod.deletedRv !== undefined)).toBe(true),
      LONG,
    );
    const suspendSeenAt = Date.now();
    const suspendedAt = job.events.find((e) => suspended(e.obj))?.at;
    if (k.tl.succeeded(job) || suspendedAt === undefined)
      throw new Error(`the first pod (${RUN} s) completed before the pause suspended its Job: the scenario was missed`);
    const suspendDelay = (suspendedAt - pausedAt) / 1000;
    // Paused well past the stage's whole timeout, so longer than the time it had left.
    await sleep(Math.max(0, job.addedAt + (TIMEOUT + 8) * 1000 - Date.now()));
    const resumedAt = Date.now();
    const ranBeforePause = (pausedAt - job.addedAt) / 1000;
    expect((resumedAt - pausedAt) / 1000).toBeGreaterThan(TIMEOUT - ranBeforePause);
    await e2e.cliOk(['rollout', 'resume', name, '--reason', 'e2e: G14 resume']);
    // Until apply's outcome is recorded: complete (the entry moves on to config, which runs RUN seconds more, unwatched)
    // or erroring (its Job failed at its deadline).
    const settled = await k.untilState(node, name, "apply's outcome recorded", (s) => {
      const e = entry(s, 'tools');
      if (e?.stage !== 'config' && e?.state !== 'erroring') throw new Error(`tools at ${e?.stage} ${e?.state}`);
    });
    expect(entry(settled, 'tools')).toMatchObject({ stage: 'config' });
    // The same Job was resumed (not replaced) and completed: it never failed on its deadline.
    expect(k.tl.jobsOn(node, 'tools@1.0.0:apply').map((j) => j.uid)).toEqual([job.uid]);
    expect(k.tl.succeeded(job)).toBe(true);
    expect(job.ever((j) => (j.status?.conditions ?? []).some((c) => c.type === 'Failed' && c.status === 'True'))).toBe(
      false,
    );
    // Its deadline on resume is the time it had left, counted by Kubernetes from the resume: not the whole timeout.
    const resumed = job.events.find(
      (e, i) => i > 0 && !suspended(e.obj) && job.events.slice(0, i).some((x) => suspended(x.obj)),
    );
    expect(resumed).toBeDefined();
    const left = resumed!.obj.spec!.activeDeadlineSeconds!;
    console.log(
      `G14 pause: pause sent ${ranBeforePause.toFixed(1)}s after the Job was created, Job suspended ` +
        `${suspendDelay.toFixed(1)}s after the pause was sent; paused ${((resumedAt - pausedAt) / 1000).toFixed(1)}s; ` +
        `timeout ${TIMEOUT}s, resumed with activeDeadlineSeconds ${left}`,
    );
    expect(left).toBeLessThanOrEqual(TIMEOUT - Math.floor(ranBeforePause));
    // The stage's clock starts when the node workflow starts the stage, after the rollout was started.
    expect(left).toBeGreaterThanOrEqual(TIMEOUT - Math.ceil((suspendSeenAt - startedAt) / 1000) - 1);
    expect(left).toBeGreaterThan(RUN);
    // A new pod ran the stage after the resume, and succeeded.
    const pods = k.tl.podsOf(job);
    expect(pods.length).toBeGreaterThanOrEqual(2);
    const last = pods.sort((a, b) => a.addedRv - b.addedRv).at(-1)!;
    expect(last.addedAt).toBeGreaterThanOrEqual(resumedAt);
    expect(last.ever((p) => p.status?.phase === 'Succeeded')).toBe(true);
  },
  420_000,
);

test.concurrent(
  'G14 a rollout started paused runs after resume',
  async () => {
    const node = k.take(1);
    const name = 'startpaused';
    const doc = manifest({ name, nodes: [node], packages: { tools: { version: '1.0.0' } } });
    doc.metadata.annotations = { [`${PREFIX}pause`]: 'true' };
    await e2e.start_(name, [doc]);
    // The rollout lists the node but, paused from its start, admits it to no batch: the node stays untouched.
    const paused = await e2e.statusUntil(
      name,
      'paused, with its node',
      (s) => {
        expect(s.status).toBe('paused');
        expect(s.nodes[node]?.status).toBeDefined();
      },
      LONG,
    );
    console.log(`started paused: node ${node} ${JSON.stringify(paused.nodes[node])}`);
    // Nothing to wait for: a paused rollout starts nothing, and this window is where it would.
    await sleep(5_000);
    expect(k.tl.jobsOn(node)).toEqual([]);
    expect((await e2e.status(name)).status).toBe('paused');

    const resumedAt = Date.now();
    await e2e.cliOk(['rollout', 'resume', name, '--reason', 'e2e: G14 started paused']);
    await e2e.waitComplete(name, LONG);
    const jobs = k.tl.jobsOn(node);
    expect(jobs.map((j) => j.key)).toEqual(['tools@1.0.0:apply', 'tools@1.0.0:config']);
    for (const j of jobs) expect(j.addedAt).toBeGreaterThanOrEqual(resumedAt);
    expect(entry(await e2e.nodeState(node, name), 'tools')).toMatchObject({ stage: 'config', state: 'complete' });
  },
  420_000,
);

test.concurrent(
  'G13 a drain timeout under policy fail: erroring with DrainTimeout, permit returned, a rerun completes',
  async () => {
    const node = k.take(2);
    const name = 'drainfail';
    const policy = e2e.kc.makeApiClient(PolicyV1Api);
    const app = `guard-${node.slice(-2)}`;
    // A pod on the node that cannot be evicted: its disruption budget allows no disruption.
    await policy.createNamespacedPodDisruptionBudget({
      namespace: e2e.namespace,
      body: { metadata: { name: app }, spec: { maxUnavailable: 0, selector: { matchLabels: { app } } } },
    });
    await e2e.core.createNamespacedPod({
      namespace: e2e.namespace,
      body: {
        // Managed by a controller: kubectl's rules evict it, and only its disruption budget holds the drain.
        metadata: { name: app, labels: { app }, ownerReferences: await standInController(e2e.core, e2e.namespace) },
        spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/keelson/app:1' }] },
      },
    });
    await eventually('the guard pod running', async () =>
      expect((await e2e.core.readNamespacedPod({ name: app, namespace: e2e.namespace })).status?.phase).toBe('Running'),
    );
    const bootBefore = bootId(await e2e.node(node));
    const packages = { drv: { version: '1.0.0', interrupt: { type: 'reboot' } } };
    await e2e.start_(name, [manifest({ name, nodes: [node], packages })]);
    await e2e.statusUntil(name, 'erroring', (s) => expect(s.nodes[node]?.status).toBe('erroring'), LONG);

    const report = await k.nodeStatus(node);
    const drv = report.rollouts[name].packages.drv;
    // The drain comes before drv's apply (its run ends in a reboot): apply is what erred.
    expect(drv).toMatchObject({ version: '1.0.0', stage: 'apply', state: 'erroring' });
    expect(drv.lastError).toContain(`DrainTimeout: drain of node ${node} timed out after ${DRAIN_TIMEOUT}s`);
    expect(drv.lastError).toContain(`${e2e.namespace}/${app}`);
    const stored = entry(await e2e.nodeState(node, name), 'drv') as unknown as { state: string; lastError?: string };
    expect(stored).toMatchObject({ state: 'erroring', lastError: expect.stringContaining('DrainTimeout') });
    // The permit went back; the node stays cordoned by the rollout (policy fail); the guard pod was never evicted.
    await eventually('the interrupt permit returned', async () => {
      expect((await k.nodeStatus(node)).interrupt).toBeNull();
      expect((await e2e.apiStatus(name)).permits).toEqual([]);
    });
    expect((await k.nodeStatus(node)).cordonedBy).toBe(name);
    expect(isCordoned(await e2e.node(node), name)).toBe(true);
    const guard = await e2e.core.readNamespacedPod({ name: app, namespace: e2e.namespace });
    expect(guard.metadata?.deletionTimestamp).toBeUndefined();
    // drv's apply needs the drained node: nothing of drv ran.
    expect(k.tl.jobsOn(node)).toEqual([]);

    // The budget goes; a rerun drains (the guard pod is evicted), reboots and completes.
    await policy.deleteNamespacedPodDisruptionBudget({ name: app, namespace: e2e.namespace });
    await e2e.cliOk(['node', 'rerun', node, '--rollout', name, '--package', 'drv']);
    await e2e.waitComplete(name, LONG);
    expect(entry(await e2e.nodeState(node, name), 'drv')).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
    expect(k.tl.jobsOn(node).map((j) => j.key)).toEqual([
      'drv@1.0.0:apply',
      'drv@1.0.0:config',
      'drv@1.0.0:interrupt',
      'drv@1.0.0:post-interrupt',
    ]);
    const evicted = [...k.tl.pods.values()].find((p) => p.name === app);
    expect(evicted?.deletedRv).toBeDefined();
    const after = await e2e.node(node);
    expect(bootId(after)).not.toBe(bootBefore);
    expect(after.spec?.unschedulable ?? false).toBe(false);
    expect((await k.nodeStatus(node)).cordonedBy).toBeNull();
  },
  420_000,
);

test.concurrent(
  'G13 a reboot that does not come back ends erroring with RebootTimeout; a rerun reboots',
  async () => {
    const node = k.take(3);
    const name = 'noreturn';
    const admission = e2e.kc.makeApiClient(AdmissionregistrationV1Api);
    const hold = `keelson-${e2e.cluster}-hold-boot`;
    const bootBefore = bootId(await e2e.node(node));
    // The node does not come back: an admission policy refuses any new boot ID on this node's status, so the
    // simulator's reboot (new boot ID, NotReady, Ready) is not reported; the simulator retries it every second.
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: hold },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes/status'] },
            ],
          },
          matchConditions: [{ name: 'this-node', expression: `object.metadata.name == '${node}'` }],
          validations: [
            {
              expression:
                '!has(oldObject.status.nodeInfo) || !has(object.status.nodeInfo) || ' +
                'object.status.nodeInfo.bootID == oldObject.status.nodeInfo.bootID',
              message: 'e2e: this node does not come back from its reboot',
            },
          ],
        },
      },
    });
    const unhold = async () => {
      await admission.deleteValidatingAdmissionPolicyBinding({ name: hold }).catch(() => undefined);
      await admission.deleteValidatingAdmissionPolicy({ name: hold }).catch(() => undefined);
    };
    try {
      await admission.createValidatingAdmissionPolicyBinding({
        body: { metadata: { name: hold }, spec: { policyName: hold, validationActions: ['Deny'] } },
      });
      await eventually('the admission policy in force', async () => {
        const tried = e2e.core.patchNodeStatus(
          { name: node, dryRun: 'All', body: { status: { nodeInfo: { bootID: 'e2e-probe' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        await expect(tried).rejects.toMatchObject({ code: 422 });
      });

      const packages = { drv: { version: '1.0.0', interrupt: { type: 'reboot' } } };
      await e2e.start_(name, [manifest({ name, nodes: [node], packages })]);
      await e2e.statusUntil(name, 'erroring', (s) => expect(s.nodes[node]?.status).toBe('erroring'), LONG);
      const drv = (await k.nodeStatus(node)).rollouts[name].packages.drv;
      expect(drv).toMatchObject({ version: '1.0.0', stage: 'interrupt', state: 'erroring' });
      expect(drv.lastError).toContain(
        `RebootTimeout: node ${node} did not come back from its reboot within ${REBOOT_TIMEOUT}s`,
      );
      await eventually('the interrupt permit returned', async () => {
        expect((await k.nodeStatus(node)).interrupt).toBeNull();
        expect((await e2e.apiStatus(name)).permits).toEqual([]);
      });
      // The agent did its part (the interrupt Job completed); the node never reported a new boot.
      const first = k.tl.jobsOn(node, 'drv@1.0.0:interrupt');
      expect(first).toHaveLength(1);
      expect(k.tl.succeeded(first[0]!)).toBe(true);
      expect(bootId(await e2e.node(node))).toBe(bootBefore);
      expect(isCordoned(await e2e.node(node), name)).toBe(true);
    } finally {
      await unhold();
    }

    // The node comes back late (the held reboot lands), then a rerun of the interrupt reboots it again.
    const late = await eventually(
      'the late reboot seen',
      async () => {
        const n = await e2e.node(node);
        expect(bootId(n)).not.toBe(bootBefore);
        expect(nodeReady(n)).toBe(true);
        return bootId(n);
      },
      LONG,
    );
    await e2e.cliOk(['node', 'rerun', node, '--rollout', name, '--package', 'drv', '--stage', 'interrupt']);
    await e2e.waitComplete(name, LONG);
    expect(entry(await e2e.nodeState(node, name), 'drv')).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
    const interrupts = k.tl.jobsOn(node, 'drv@1.0.0:interrupt');
    expect(interrupts).toHaveLength(2);
    expect(k.tl.succeeded(interrupts[1]!)).toBe(true);
    const after = await e2e.node(node);
    expect(bootId(after)).not.toBe(late);
    expect(bootId(after)).not.toBe(bootBefore);
    expect(after.spec?.unschedulable ?? false).toBe(false);
  },
  480_000,
);
