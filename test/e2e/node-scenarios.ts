import type { V1Job, V1Node } from '@kubernetes/client-node';
import { eventually, eventuallyRead, skyhook, type E2E, type NodeStateJson, type SkyhookDef } from './e2e-stack';
import { Timeline } from './timeline';

// What the G11-G14 files (interleavings.test.ts, failures-pauses.test.ts) share: each test takes a node of its own and
// runs a rollout on it alone, so the tests of a file run at once (test.concurrent: their waits overlap), and the file
// keeps a Timeline of its Jobs, Pods and Nodes; at the end the record of each test's node is printed, whatever the
// outcome, as the evidence behind its assertions.

/** Generous: on a loaded 2-core machine one CLI call can take many seconds. */
export const LONG = 240_000;

export type Doc = Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> };
export const manifest = (def: SkyhookDef): Doc => skyhook(def) as Doc;

export const bootId = (n: V1Node) => n.status?.nodeInfo?.bootID ?? '';
export const suspended = (j: V1Job) => j.spec?.suspend === true;

export class NodeScenarios {
  tl!: Timeline;
  /** The nodes the tests took. */
  private readonly taken = new Set<string>();

  constructor(readonly e2e: E2E) {}

  /** Registers the file's hooks: `nodes` fake nodes, the worker and API, the Timeline; all gone at the end. */
  static use(e2e: E2E, nodes: number): NodeScenarios {
    const k = new NodeScenarios(e2e);
    beforeAll(async () => {
      await e2e.start({ nodes });
      k.tl = await Timeline.start(e2e.kc, e2e.namespace, e2e.cluster);
    }, 180_000);
    afterAll(async () => {
      for (const node of k.taken)
        if (k.tl)
          console.log(`Jobs on ${node} (versions are the API server's write order):\n${k.tl.describeJobs(node)}`);
      k.tl?.stop();
      await e2e.stop();
    }, 300_000);
    return k;
  }

  /** A test's node, the i-th of the file's. */
  take(i: number): string {
    const node = this.e2e.nodes[i]!;
    this.taken.add(node);
    return node;
  }

  /** Waits until a pod of `key` (`<package>@<version>:<stage>`) runs on the node: the stage is in flight. */
  async runningPod(node: string, key: string) {
    return eventually(
      `${key} running on ${node}`,
      async () => {
        const pod = this.tl.podsOn(node, key).find((p) => p.last.status?.phase === 'Running' && !p.deletedRv);
        if (!pod) throw new Error(`no running pod; jobs:\n${this.tl.describeJobs(node)}`);
        return pod;
      },
      LONG,
    );
  }

  /** Waits until the node's annotation for the rollout passes `check` (throwing means not yet). */
  async untilState(node: string, rollout: string, what: string, check: (s: NodeStateJson) => void) {
    const state = await eventuallyRead(
      `${node} ${rollout}: ${what}`,
      () => this.e2e.nodeState(node, rollout),
      (s) => {
        if (!s) throw new Error('no node state yet');
        check(s);
      },
      LONG,
    );
    return state!;
  }

  /**
   * The rollout on the node alone: started with `before`, its packages changed to `after` once a pod of `running`
   * (`<package>@<version>:<stage>`) runs, and waited on until generation 2 is complete. Returns when the change was
   * sent.
   */
  async changeWhileRunning(
    node: string,
    name: string,
    before: SkyhookDef['packages'],
    running: string,
    after: SkyhookDef['packages'],
  ): Promise<number> {
    await this.e2e.start_(name, [manifest({ name, nodes: [node], packages: before })]);
    await this.runningPod(node, running);
    const changedAt = Date.now();
    await this.e2e.apply(name, [manifest({ name, nodes: [node], packages: after })]);
    await this.e2e.statusUntil(
      name,
      'generation 2 complete',
      (s) => expect(s).toMatchObject({ generation: 2, status: 'complete' }),
      LONG,
    );
    return changedAt;
  }

  /** `node status NODE --json`, parsed. */
  async nodeStatus(node: string) {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- CLI JSON, read field by field
    return JSON.parse(await this.e2e.cliOk(['node', 'status', node, '--json'])) as Record<string, any>;
  }
}
