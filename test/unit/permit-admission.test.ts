import fc from 'fast-check';
import type { AssignedCompartment, Status } from '../../model';
import { admitNext, newCompartmentBatch, type AdmissionMode } from '../../workflows/rollout/batch-admission';
import {
  grantPermits,
  newPermitState,
  releasePermit,
  requestPermit,
  requestWithAdmission,
  withdrawUnasked,
} from '../../workflows/rollout/interrupt-permits';

// Model-based test of interrupt permits granted with the admission (docs/architecture.md, "Permits with the
// admission"): one compartment's rollout books (admitNext, requestWithAdmission, grantPermits, withdrawUnasked,
// releasePermit, as the rollout workflow calls them) against nodes that take a desire (maybe twice: its activity may
// deliver it again), ask, cordon, reboot and release, with every message between them in flight for as long as the
// interleaving likes, and a node's report overtaking its signals. After every event:
// - G16 the budget: at most `ceiling` nodes are cordoned, the books never hold more than `ceiling` permits, and every
//   permit a node holds is the one the books hold for it.
// Settled, every node is complete, and no permit is held or asked for.

const RUNS = Number(process.env.KEELSON_MODEL_RUNS ?? 2_000);
const seed = Number(process.env.KEELSON_MODEL_SEED ?? Date.now() % 2 ** 31);
const reached = { withAdmission: 0, onRequest: 0, releaseAwaited: 0, handedBack: 0, redelivered: 0 };

type ToNode = { kind: 'desire'; permit?: string } | { kind: 'grant'; permit: string };
type ToRollout = { kind: 'request' } | { kind: 'release'; permit: string };

interface NodeSim {
  /** Stages left before its interrupting package's turn (dependsOn): a permit held meanwhile is unused. */
  workBefore: number;
  /** Those stages leave a moment with nothing running, when an unused permit goes back. */
  gapBefore: boolean;
  needsInterrupt: boolean;
  admitted: boolean;
  complete: boolean;
  interrupt: { phase: 'requested' | 'granted' | 'cordoned'; permit: string | null } | null;
  inbox: ToNode[];
  /** Signals to the rollout, in order. */
  outbox: ToRollout[];
  /** The report that the node is complete: sent by the node-state write's activity, so it may overtake a signal. */
  reportPending: boolean;
  lastDesire?: ToNode;
  admissionPermit?: string;
}

class Fleet {
  readonly permits = newPermitState();
  readonly batch = newCompartmentBatch();
  readonly reported = new Set<string>();
  readonly nodes: Record<string, NodeSim>;
  readonly compartment: AssignedCompartment;

  constructor(
    readonly mode: AdmissionMode,
    ceiling: number,
    batchSize: number,
    nodes: { workBefore: number; gapBefore: boolean; needsInterrupt: boolean }[],
  ) {
    const names = nodes.map((_, i) => `n${i}`);
    this.compartment = {
      name: '__default__',
      budget: { count: ceiling },
      ceiling,
      nodes: names,
      strategy: {
        type: 'fixed',
        initialBatch: batchSize,
        batchThreshold: 100,
        failureThreshold: null,
        safetyLimit: 50,
      },
    };
    this.nodes = Object.fromEntries(
      nodes.map((n, i) => [
        `n${i}`,
        {
          ...n,
          admitted: false,
          complete: false,
          interrupt: null,
          inbox: [],
          outbox: [],
          reportPending: false,
        } satisfies NodeSim,
      ]),
    );
  }

  /** As admission sees it (admissionStatus): a complete node whose permit is still booked is in flight. */
  status(node: string): Status {
    if (!this.nodes[node]!.admitted) return 'waiting';
    if (!this.reported.has(node)) return 'in_progress';
    if (this.permits.holders[node] === undefined) return 'complete';
    reached.releaseAwaited++;
    return 'in_progress';
  }

  /** A pass of the rollout workflow (admit in workflows/rollout/workflow.ts): admission, then grants. */
  pass(): void {
    const names = this.compartment.nodes;
    const statuses = names.map((name) => ({ name, status: this.status(name) }));
    const admitting = admitNext(this.mode, this.compartment, statuses, (n) => this.nodes[n]!.admitted, this.batch);
    for (const node of admitting) {
      this.nodes[node]!.admitted = true;
      this.nodes[node]!.inbox.push({ kind: 'desire' });
    }
    let queued: string[] = [];
    if (admitting.length > 0) {
      const inFlight = statuses.filter((n) => n.status === 'in_progress').length + admitting.length;
      queued = requestWithAdmission(this.permits, admitting, inFlight, this.compartment.ceiling);
    }
    for (const g of grantPermits(this.permits, () => this.compartment, true)) {
      if (queued.includes(g.node)) reached.withAdmission++;
      const inbox = this.nodes[g.node]!.inbox;
      const desire = inbox.find((m) => m.kind === 'desire' && !m.permit);
      if (desire?.kind === 'desire') desire.permit = g.permit;
      else inbox.push({ kind: 'grant', permit: g.permit });
    }
    withdrawUnasked(this.permits, queued);
  }

  /** The desire's activity delivers the last desire again (a retry after a worker crash), permit and all. */
  desireAgain(node: string): void {
    const n = this.nodes[node]!;
    if (n.lastDesire) n.inbox.push({ ...n.lastDesire });
  }

  /** The rollout takes the oldest signal of one node (signals from one sender arrive in order). */
  rolloutReceives(node: string): void {
    const m = this.nodes[node]!.outbox.shift();
    if (m?.kind === 'request') requestPermit(this.permits, node);
    else if (m?.kind === 'release') releasePermit(this.permits, node, m.permit);
  }

  rolloutTakesReport(node: string): void {
    const n = this.nodes[node]!;
    if (!n.reportPending) return;
    n.reportPending = false;
    this.reported.add(node);
  }

  /** The node workflow takes its oldest message (workflows/node/workflow.ts, takeGrant). */
  nodeReceives(node: string): void {
    const n = this.nodes[node]!;
    const m = n.inbox.shift();
    if (m?.kind === 'desire') {
      n.lastDesire = m;
      // The same desire delivered again hands nothing over (NodeRollout.admissionPermit).
      if (!m.permit) return;
      if (n.admissionPermit === m.permit) {
        reached.redelivered++;
        return;
      }
      n.admissionPermit = m.permit;
    }
    if (!m?.permit) return;
    const held = n.interrupt;
    if (held?.phase === 'requested' || !held) {
      if (held) reached.onRequest++;
      n.interrupt = { phase: 'granted', permit: m.permit };
    } else if (held.permit) {
      // A second grant (the node's release and request crossed): the newer is kept, the older goes back.
      if (held.permit !== m.permit) n.outbox.push({ kind: 'release', permit: held.permit });
      held.permit = m.permit;
    } else n.outbox.push({ kind: 'release', permit: m.permit });
  }

  /** One step of the node's work (decideNode: request, prepare, interrupt, release). */
  nodeWorks(node: string): void {
    const n = this.nodes[node]!;
    if (!n.admitted || n.inbox.some((m) => m.kind === 'desire')) return;
    const held = n.interrupt;
    if (n.complete) {
      // A grant that came after the node's work was done goes back (releaseIfDone of a complete rollout).
      if (held?.permit) {
        reached.handedBack++;
        n.outbox.push({ kind: 'release', permit: held.permit });
        n.interrupt = null;
      }
      return;
    }
    if (n.workBefore > 0) {
      // A moment with nothing running before the interrupting package's turn: an unused permit goes back.
      if (n.gapBefore && held?.phase === 'granted') {
        reached.handedBack++;
        n.outbox.push({ kind: 'release', permit: held.permit! });
        n.interrupt = null;
        n.gapBefore = false;
      } else n.workBefore--;
      return;
    }
    if (n.needsInterrupt) {
      if (!held) {
        n.interrupt = { phase: 'requested', permit: null };
        n.outbox.push({ kind: 'request' });
      } else if (held.phase === 'granted') {
        held.phase = 'cordoned';
      } else if (held.phase === 'cordoned') {
        n.needsInterrupt = false;
        n.outbox.push({ kind: 'release', permit: held.permit! });
        n.interrupt = null;
      }
      return;
    }
    if (held?.permit) {
      // A node whose work needs no interrupt hands back the permit that came with its admission (releaseIfDone).
      reached.handedBack++;
      n.outbox.push({ kind: 'release', permit: held.permit });
      n.interrupt = null;
      return;
    }
    n.complete = true;
    n.reportPending = true;
  }

  check(): void {
    const ceiling = this.compartment.ceiling;
    const cordoned = Object.values(this.nodes).filter((n) => n.interrupt?.phase === 'cordoned').length;
    if (cordoned > ceiling) throw new Error(`G16: ${cordoned} nodes cordoned, ceiling ${ceiling}`);
    const booked = Object.keys(this.permits.holders).length;
    if (booked > ceiling) throw new Error(`G16: the books hold ${booked} permits, ceiling ${ceiling}`);
    for (const [name, n] of Object.entries(this.nodes)) {
      const permit = n.interrupt?.permit;
      if (permit && this.permits.holders[name] !== permit)
        throw new Error(`G16: ${name} holds ${permit}, the books ${this.permits.holders[name] ?? 'nothing'}`);
    }
  }

  settle(): void {
    for (let round = 0; round < 500; round++) {
      this.pass();
      for (const node of this.compartment.nodes) {
        while (this.nodes[node]!.inbox.length > 0) this.nodeReceives(node);
        this.nodeWorks(node);
        while (this.nodes[node]!.outbox.length > 0) this.rolloutReceives(node);
        this.rolloutTakesReport(node);
      }
      this.check();
    }
    const left = Object.entries(this.nodes).filter(([, n]) => !n.complete);
    if (left.length > 0) throw new Error(`not complete: ${left.map(([name]) => name).join(', ')}`);
    if (Object.keys(this.permits.holders).length > 0 || this.permits.queue.length > 0)
      throw new Error(`permits left: ${JSON.stringify(this.permits)}`);
  }
}

type Cmd = fc.Command<Record<string, never>, Fleet>;
const command = (label: string, act: (fleet: Fleet) => void): Cmd => ({
  check: () => true,
  run: (_m, fleet) => {
    act(fleet);
    fleet.check();
  },
  toString: () => label,
});
const nodeIndex = fc.nat({ max: 7 });
const nodeOf = (fleet: Fleet, i: number) => fleet.compartment.nodes[i % fleet.compartment.nodes.length]!;
const commands = [
  fc.constant(command('rollout pass', (f) => f.pass())),
  nodeIndex.map((i) => command(`node ${i} receives`, (f) => f.nodeReceives(nodeOf(f, i)))),
  nodeIndex.map((i) => command(`desire to ${i} delivered again`, (f) => f.desireAgain(nodeOf(f, i)))),
  nodeIndex.map((i) => command(`node ${i} works`, (f) => f.nodeWorks(nodeOf(f, i)))),
  nodeIndex.map((i) => command(`rollout receives from ${i}`, (f) => f.rolloutReceives(nodeOf(f, i)))),
  nodeIndex.map((i) => command(`rollout takes the report of ${i}`, (f) => f.rolloutTakesReport(nodeOf(f, i)))),
  // A node gets through its messages and work, and its report reaches the rollout, while its signals wait.
  nodeIndex.map((i) =>
    command(`node ${i} catches up`, (f) => {
      for (let step = 0; step < 6; step++) {
        while (f.nodes[nodeOf(f, i)]!.inbox.length > 0) f.nodeReceives(nodeOf(f, i));
        f.nodeWorks(nodeOf(f, i));
      }
      f.rolloutTakesReport(nodeOf(f, i));
    }),
  ),
];
const fleetArb = fc.record({
  mode: fc.constantFrom<AdmissionMode>('batches', 'sliding-window'),
  ceiling: fc.integer({ min: 1, max: 3 }),
  batchSize: fc.integer({ min: 1, max: 5 }),
  nodes: fc.array(
    fc.record({ workBefore: fc.nat({ max: 2 }), gapBefore: fc.boolean(), needsInterrupt: fc.boolean() }),
    {
      minLength: 1,
      maxLength: 8,
    },
  ),
});

test(`G16 permits granted with the admission keep the budget over ${RUNS} random interleavings (seed ${seed})`, () => {
  const result = fc.check(
    fc.property(fleetArb, fc.commands(commands, { maxCommands: 80 }), (setup, cmds) => {
      const fleet = new Fleet(setup.mode, setup.ceiling, setup.batchSize, setup.nodes);
      fc.modelRun(() => ({ model: {}, real: fleet }), cmds);
      fleet.settle();
    }),
    { seed, numRuns: RUNS },
  );
  if (result.failed) {
    throw new Error(
      `KEELSON_MODEL_SEED=${seed} reproduces it; shrunk counterexample:\n${String(result.counterexample)}\n${String(result.errorInstance)}`,
    );
  }
  console.log(`permit interleavings reached (seed ${seed}): ${JSON.stringify(reached)}`);
  expect(reached.withAdmission).toBeGreaterThan(RUNS / 2);
  expect(reached.onRequest).toBeGreaterThan(RUNS / 10);
  expect(reached.releaseAwaited).toBeGreaterThan(RUNS / 50);
  expect(reached.handedBack).toBeGreaterThan(RUNS / 10);
  expect(reached.redelivered).toBeGreaterThan(RUNS / 200);
});

test('a batch larger than the ceiling gets no permit with its admission: its nodes ask, the ceiling decides', () => {
  const fleet = new Fleet(
    'batches',
    2,
    4,
    [0, 0, 0, 0].map(() => ({ workBefore: 0, gapBefore: false, needsInterrupt: true })),
  );
  fleet.pass();
  expect(Object.values(fleet.nodes).map((n) => n.inbox)).toEqual([0, 0, 0, 0].map(() => [{ kind: 'desire' }]));
  expect(fleet.permits.holders).toEqual({});
  const legacy = new Fleet(
    'batches',
    2,
    2,
    [0, 0, 0, 0].map(() => ({ workBefore: 0, gapBefore: false, needsInterrupt: true })),
  );
  legacy.pass();
  expect(legacy.nodes.n0!.inbox).toEqual([{ kind: 'desire', permit: 'n0#1' }]);
  expect(legacy.nodes.n1!.inbox).toEqual([{ kind: 'desire', permit: 'n1#2' }]);
  expect(legacy.permits.holders).toEqual({ n0: 'n0#1', n1: 'n1#2' });
});

test('a node admitted while the ceiling is taken (a release still on its way) is not left queued: it asks itself', () => {
  const p = newPermitState();
  const compartment = { name: 'c', ceiling: 1 };
  requestPermit(p, 'old');
  expect(grantPermits(p, () => compartment)).toEqual([{ node: 'old', permit: 'old#1' }]);
  const queued = requestWithAdmission(p, ['new'], 1, 1);
  expect(queued).toEqual(['new']);
  expect(grantPermits(p, () => compartment)).toEqual([]);
  withdrawUnasked(p, queued);
  expect(p.queue).toEqual([]);
  // A node that had asked before its admission keeps its place.
  requestPermit(p, 'asked');
  expect(requestWithAdmission(p, ['asked'], 1, 1)).toEqual([]);
  withdrawUnasked(p, []);
  expect(p.queue).toEqual(['asked']);
});
