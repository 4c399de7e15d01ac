import type { RolloutStatusView } from '../workflows/messages';

// Times the status query does not carry: when a rollout last made progress, and since when each node holds its
// interrupt permit. The worker reads every rollout's status at each metrics refresh; these clocks note when what it
// reads changes. A clock starts when this replica first sees the rollout or permit, so a restarted replica
// under-reports until the change after its start: over replicas, take the oldest progress time (`min()`) and the
// longest hold (`max()`), which the replica that stayed up still reports.

/**
 * What counts as progress: the rollout's status, flags, generation, and every node's status and package stages and
 * states. A pause, resume or spec update changes it too, so a rollout is not stalled the moment it is resumed.
 */
function progressOf(r: RolloutStatusView): string {
  const nodes = Object.entries(r.nodes).map(([node, n]) => [
    node,
    n.status,
    Object.entries(n.packages).map(([pkg, p]) => [pkg, p.version, p.stage, p.state]),
  ]);
  return JSON.stringify([r.status, r.paused, r.disabled, r.generation, nodes]);
}

export interface PermitHold {
  rollout: string;
  node: string;
  seconds: number;
}

export class RolloutClocks {
  private readonly progress = new Map<string, { seen: string; at: number }>();
  /** JSON [rollout, node] -> when this replica first saw the node hold the rollout's permit (ms). */
  private readonly permitSince = new Map<string, number>();

  /** Notes what changed since the last observation, at `now` (ms); rollouts no longer running are forgotten. */
  observe(rollouts: readonly RolloutStatusView[], now: number): void {
    const names = new Set(rollouts.map((r) => r.name));
    for (const name of this.progress.keys()) if (!names.has(name)) this.progress.delete(name);
    for (const r of rollouts) {
      const seen = progressOf(r);
      if (this.progress.get(r.name)?.seen !== seen) this.progress.set(r.name, { seen, at: now });
    }
    const held = new Set(rollouts.flatMap((r) => r.permits.map((node) => JSON.stringify([r.name, node]))));
    for (const key of this.permitSince.keys()) if (!held.has(key)) this.permitSince.delete(key);
    for (const key of held) if (!this.permitSince.has(key)) this.permitSince.set(key, now);
  }

  /** When the rollout last made progress, in seconds since the epoch. */
  lastProgressSeconds(rollout: string): number | undefined {
    const p = this.progress.get(rollout);
    return p && p.at / 1000;
  }

  /** Every permit held now, with how long it has been held at `now` (ms). */
  permitHolds(now: number): PermitHold[] {
    return [...this.permitSince].map(([key, since]) => {
      const [rollout, node] = JSON.parse(key) as [string, string];
      return { rollout, node, seconds: (now - since) / 1000 };
    });
  }
}
