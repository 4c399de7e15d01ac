import type { PackageProgress, State, Status } from './node-state';

// Which node-state writes a node reports to its rollout (issue 15). The rollout decides by the node's status and
// generation; it shows each package's stage, state and restarts. So a write is reported at once when the status or the
// generation changes, a package starts or stops erroring (or unknown), or its restarts change; a package that moves
// along (a stage, in progress or complete, a new package or version) only when the last report is
// STAGE_REPORT_INTERVAL_MS old. Quick stages are coalesced into the next report, a node's last write is reported
// whenever it changes its status, and a node at rest (nothing running, everything written) sends the report it held
// back (workflows/node/state-writer.ts).

/** How stale a running package's stage may be in the rollout's status view before a write reports it alone. */
export const STAGE_REPORT_INTERVAL_MS = 10_000;

export interface ProgressToReport {
  generation: number;
  status: Status;
  state: Readonly<Record<string, PackageProgress>>;
}

/** The last report a node sent to one rollout: what it judged by, its stages, and when (workflow time, ms). */
export interface LastReport {
  judged: string;
  stages: string;
  at: number;
}

function sortedEntries(state: ProgressToReport['state']): PackageProgress[] {
  return Object.keys(state)
    .sort()
    .map((k) => state[k]!);
}

/** Whether an entry matters at once: erroring or unknown, or restarted; one that moves along waits for the interval. */
function judged(e: PackageProgress): boolean {
  const stuck: State[] = ['erroring', 'unknown'];
  return stuck.includes(e.state) || (e.restarts ?? 0) > 0;
}

/** The report a write would send, as the rollout judges it and as its status view shows the stages. */
export function reportOf(p: ProgressToReport, at: number): LastReport {
  const entries = sortedEntries(p.state);
  return {
    judged: [
      `${p.generation} ${p.status}`,
      ...entries.filter(judged).map((e) => `${e.name}|${e.version} ${e.state} ${e.restarts ?? 0}`),
    ].join('\n'),
    stages: entries.map((e) => `${e.name}|${e.version} ${e.stage} ${e.state}`).join('\n'),
    at,
  };
}

/** Whether a write with this report sends it, given the last one sent to the same rollout (none: it does). */
export function reportDue(last: LastReport | undefined, next: LastReport): boolean {
  if (!last || next.judged !== last.judged) return true;
  return next.stages !== last.stages && next.at - last.at >= STAGE_REPORT_INTERVAL_MS;
}
