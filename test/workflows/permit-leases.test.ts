import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { rolloutWorkflow } from '../../workflows';
import { nodeStateQuery, statusQuery, type NodeProgress } from '../../workflows/messages';
import { encodeNodeState } from '../../model';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import {
  eventually,
  fixedBatchPolicy,
  recordHistory,
  rolloutSpec,
  sleep,
  statusBecomes,
  useTemporal,
  withWorker,
} from './env';

// G13 permits are leases: at every relist the rollout asks its unfinished nodes what they hold (leaseCheck, answered
// by leaseReport) and its books follow, so a node workflow terminated while it holds the permit, or a request lost
// when the rollout was reset, never leaks the budget or leaves a node waiting for ever.

const t = useTemporal();
const drv = { version: '1.0.0', image: 'ghcr.io/example/drv', interrupt: { type: 'reboot' } };
const bad = { version: '1.0.0', image: 'ghcr.io/example/bad' };
/** Two nodes in a batch under a budget of one: the second waits for the first's permit. */
const twoAtOnce = fixedBatchPolicy('two-at-once', { count: 1, initialBatch: 2 });

async function run(
  cluster: FakeCluster,
  name: string,
  packages: Record<string, unknown>,
  body: () => Promise<void>,
  policy: typeof twoAtOnce | null = null,
  nodeHistoryLimit?: number,
): Promise<void> {
  const spec = rolloutSpec(
    name,
    policy ? { deploymentPolicy: policy.name, packages } : { interruptionBudget: { count: 1 }, packages },
    policy,
  );
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId(name, name),
      args: [
        {
          cluster: name,
          spec,
          options: {
            relistInterval: '1 second',
            ...(nodeHistoryLimit && {
              node: {
                protectedPodsTimeoutSeconds: 60,
                drainTimeoutSeconds: 60,
                drainOnTimeout: 'wait' as const,
                rebootTimeoutSeconds: 60,
                historyEventLimit: nodeHistoryLimit,
              },
            }),
          },
        },
      ],
    });
    await body();
  });
}
/**
 * node-b has every package of the rollout already: a batch of two under a budget of one (twoAtOnce) is no admission
 * that grants permits (requestWithAdmission), so node-a asks for its permit and the rollout grants it. node-a reads
 * its node late, so node-b's report is in the rollout's history before node-a's request, and a reset to before the
 * request or its grant keeps it.
 */
function withNodeBDone(cluster: FakeCluster, name: string, packages: Record<string, typeof bad>): void {
  cluster.readNodeMs = { 'node-a': 2000 };
  const done = (n: string, p: typeof bad) =>
    [
      `${n}|${p.version}`,
      {
        name: n,
        version: p.version,
        image: p.image,
        stage: 'interrupt' in p ? 'post-interrupt' : 'config',
        state: 'complete',
      },
    ] as const;
  cluster.annotations.set(
    `node-b/${name}`,
    encodeNodeState(Object.fromEntries(Object.entries(packages).map(([n, p]) => done(n, p)))),
  );
}
const rollout = (name: string) => t.env.client.workflow.getHandle(rolloutWorkflowId(name, name));
const node = (name: string, n: string) => t.env.client.workflow.getHandle(nodeWorkflowId(name, n));
const interrupted = (cluster: FakeCluster) =>
  cluster.callsOf('runInterrupt').map((c) => (c.input as { node: string }).node);

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const requestEvent = (e: HistoryEvent) => e.workflowExecutionSignaledEventAttributes?.signalName === 'requestInterrupt';
const grantEvent = (e: HistoryEvent) =>
  e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'grantInterrupt';

/** Resets the rollout to the last workflow task completed before `events[at]`, dropping every signal after it. */
async function resetBefore(name: string, events: HistoryEvent[], at: number, reason: string): Promise<void> {
  const task = events
    .slice(0, at)
    .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    .pop()!;
  const handle = rollout(name);
  await t.env.client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId: handle.workflowId, runId: (await handle.describe()).runId },
    reason,
    workflowTaskFinishEventId: task.eventId,
    requestId: randomUUID(),
    resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
  });
}

test('G13 a node workflow terminated while it holds the permit is started again and granted it; the budget holds', async () => {
  // node-a and node-b in one batch under a budget of one: one reboots, the other waits for the permit.
  const cluster = new FakeCluster(['node-a', 'node-b']);
  cluster.interruptMs = 20_000;
  await run(
    cluster,
    'gone',
    { drv },
    async () => {
      let holder = '';
      await eventually(async () => {
        const permits = (await rollout('gone').query(statusQuery)).permits;
        expect(permits).toHaveLength(1);
        holder = permits[0]!;
        expect(interrupted(cluster)).toEqual([holder]);
      });
      const other = holder === 'node-a' ? 'node-b' : 'node-a';
      await eventually(async () =>
        expect((await node('gone', other).query(nodeStateQuery)).interrupt).toMatchObject({ phase: 'requested' }),
      );
      await node('gone', holder).terminate('by hand, while it holds the permit and reboots its node');
      cluster.interruptMs = 0;
      // The next lease check finds the holder's workflow gone: its desire is sent again, and the new node workflow
      // takes the node up from its recorded state and asks for the permit. The permit stays booked to the node (its
      // reboot may still run) and is granted to it again; the other node waits its turn.
      await statusBecomes(rollout('gone'), 'complete', 60_000);
      expect(interrupted(cluster)).toEqual([holder, holder, other]);
      expect(cluster.maxDisrupted).toBe(1);
      expect(cluster.breaches).toEqual([]);
      await recordHistory(t.env, rolloutWorkflowId('gone', 'gone'), 'rollout-lease-checks');
    },
    twoAtOnce,
  );
});

test('G13 a permit request the rollout lost (reset to before it) is queued again, also on an erroring node', async () => {
  // node-a's `bad` fails (the node reports erroring) and its `drv` asks for the permit to reboot.
  const cluster = new FakeCluster(['node-a', 'node-b']);
  withNodeBDone(cluster, 'lost', { bad, drv });
  cluster.script = (input) => ({ ms: 100, fail: input.package.name === 'bad' });
  // A slow listing keeps the rollout busy, so a request waits in history for the pass that grants it.
  cluster.listNodesMs = 4000;
  await run(
    cluster,
    'lost',
    { bad, drv },
    async () => {
      let events: HistoryEvent[] = [];
      await eventually(async () => {
        events = (await rollout('lost').fetchHistory()).events ?? [];
        expect(events.some(requestEvent)).toBe(true);
      });
      expect(events.some(grantEvent)).toBe(false);
      await resetBefore('lost', events, events.findIndex(requestEvent), 'an operator resets the rollout');
      await eventually(async () => {
        const view = await node('lost', 'node-a').query(nodeStateQuery);
        expect(view.rollouts.lost!.packages['drv|1.0.0']).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
      }, 60_000);
      expect((await rollout('lost').query(statusQuery)).status).toBe('erroring');
      expect(interrupted(cluster)).toEqual(['node-a']);
      const after = (await rollout('lost').fetchHistory()).events ?? [];
      expect(after.filter(requestEvent)).toHaveLength(0);
      expect(after.filter(grantEvent)).toHaveLength(1);
    },
    twoAtOnce,
  );
});

test('G13 a rollout reset to after a request grants it again; the node keeps one permit and the books agree', async () => {
  const cluster = new FakeCluster(['node-a', 'node-b']);
  withNodeBDone(cluster, 'regrant', { drv });
  cluster.interruptMs = 10_000;
  await run(
    cluster,
    'regrant',
    { drv },
    async () => {
      let events: HistoryEvent[] = [];
      await eventually(async () => {
        events = (await rollout('regrant').fetchHistory()).events ?? [];
        expect(events.some(grantEvent)).toBe(true);
        expect(interrupted(cluster)).toEqual(['node-a']);
      });
      await resetBefore('regrant', events, events.findIndex(grantEvent), 'an operator resets the rollout');
      // The request is before the reset point: the rollout grants the same permit again. The node, still rebooting,
      // keeps it, so the rollout's books still count node-a while it is down.
      const grantsTo = async (n: string) =>
        ((await node('regrant', n).fetchHistory()).events ?? []).filter(
          (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'grantInterrupt',
        ).length;
      await eventually(async () => expect(await grantsTo('node-a')).toBe(2));
      await sleep(1500);
      expect((await node('regrant', 'node-a').query(nodeStateQuery)).interrupt).toEqual({
        rollout: 'regrant',
        phase: 'prepared',
        permit: 'node-a#1',
      });
      expect((await rollout('regrant').query(statusQuery)).permits).toEqual(['node-a']);
      await statusBecomes(rollout('regrant'), 'complete', 60_000);
      expect(interrupted(cluster)).toEqual(['node-a']);
      await recordHistory(t.env, nodeWorkflowId('regrant', 'node-a'), 'node-regrant-keeps-one-permit');
    },
    twoAtOnce,
  );
});

test('G13 lease checks of an erroring node that waits for a rerun keep its history bounded (it continues as new)', async () => {
  const cluster = new FakeCluster(['node-a']);
  cluster.script = () => ({ ms: 100, fail: true });
  await run(
    cluster,
    'idle',
    { bad },
    async () => {
      await statusBecomes(rollout('idle'), 'erroring');
      // A check a second, each agreeing with the node (it holds and wants nothing): no answer, but history grows.
      await eventually(async () => {
        const runs: string[] = [];
        const query = `WorkflowId = '${nodeWorkflowId('idle', 'node-a')}'`;
        for await (const r of t.env.client.workflow.list({ query })) runs.push(r.runId);
        expect(runs.length).toBeGreaterThan(1);
      }, 90_000);
      const history = await node('idle', 'node-a').fetchHistory();
      expect(history.events!.length).toBeLessThan(120);
      const reports = ((await rollout('idle').fetchHistory()).events ?? []).filter(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'leaseReport',
      );
      expect(reports).toHaveLength(0);
    },
    null,
    100,
  );
});

test("G13 a node's last report dropped by a reset of the rollout is sent again at the next lease check", async () => {
  const cluster = new FakeCluster(['node-a', 'node-b']);
  // node-b finishes well after node-a: a reset to before its last report leaves node-a's in place.
  cluster.script = (input) => ({ ms: input.node === 'node-b' ? 2000 : 100 });
  await run(cluster, 'dropped', { bad }, async () => {
    const completeFrom = (node: string) => (e: HistoryEvent) => {
      const signal = e.workflowExecutionSignaledEventAttributes;
      if (signal?.signalName !== 'nodeProgress') return false;
      const report = JSON.parse(Buffer.from(signal.input!.payloads![0]!.data!).toString()) as NodeProgress;
      return report.node === node && report.status === 'complete';
    };
    let events: HistoryEvent[] = [];
    await eventually(async () => {
      events = (await rollout('dropped').fetchHistory()).events ?? [];
      expect(events.some(completeFrom('node-b'))).toBe(true);
    });
    const dropped = events.findIndex(completeFrom('node-b'));
    expect(events.slice(0, dropped).some(completeFrom('node-a'))).toBe(true);
    await resetBefore('dropped', events, dropped, "an operator resets the rollout to before node-b's last report");
    await statusBecomes(rollout('dropped'), 'complete', 30_000);
    const after = (await rollout('dropped').fetchHistory()).events ?? [];
    expect(after.filter(completeFrom('node-b')).length).toBeGreaterThanOrEqual(1);
    await recordHistory(t.env, rolloutWorkflowId('dropped', 'dropped'), 'rollout-report-on-lease-check');
    await recordHistory(t.env, nodeWorkflowId('dropped', 'node-b'), 'node-report-on-lease-check');
  });
});
