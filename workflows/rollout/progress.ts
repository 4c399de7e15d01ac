import { packageProgress, type PackageProgress } from '../../model';
import type { NodeProgress } from '../messages';

// The node progress reports a rollout folds into its batches and status: the last one it took per node, kept
// compact (it is carried across continue-as-new, for every node).

export interface ReportedProgress {
  generation: number;
  status: NodeProgress['status'];
  state: Record<string, PackageProgress>;
  order?: [number, number];
}

/**
 * Whether a report replaces the one held: a later generation does; within one generation, an older report (by its
 * order) does not, so a write activity's late copy never takes a node back to a status it has left (G1).
 */
export function takesReport(held: ReportedProgress | undefined, report: NodeProgress): boolean {
  if (!held) return true;
  if (report.generation !== held.generation) return report.generation > held.generation;
  if (!report.order || !held.order) return true;
  const [at, seq] = report.order;
  const [heldAt, heldSeq] = held.order;
  return at > heldAt || (at === heldAt && seq > heldSeq);
}

/** What the rollout keeps of a report: each package's progress (reports before local-node-calls carry whole entries). */
export function reportedProgress(report: NodeProgress): ReportedProgress {
  return {
    generation: report.generation,
    status: report.status,
    state: packageProgress(report.state),
    ...(report.order && { order: report.order }),
  };
}

/** A report that says paused or disabled of a node complete at the same generation, its packages unchanged. */
export function mirrorsHalt(held: ReportedProgress, next: ReportedProgress): boolean {
  return (
    (next.status === 'paused' || next.status === 'disabled') &&
    held.status === 'complete' &&
    held.generation === next.generation &&
    JSON.stringify(held.state) === JSON.stringify(next.state)
  );
}
