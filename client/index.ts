import type { RolloutSpec } from '../model';
import { DEFAULT_ACTOR } from '../model/access';
import type { Actor } from '../workflows/messages';
import { connect, type KeelsonContext } from './connect';
import * as nodes from './nodes';
import * as rollouts from './rollouts';
import { loadClientSettings, type ClientSettings } from './settings';

// The typed Keelson client: one Temporal connection, every rollout and node operation. The API and tests use it.

export * from './errors';
export * from './settings';
export type { KeelsonContext } from './connect';
export type { NodeReport, NodePackageReport } from './nodes';
export type {
  ApplyResult,
  ControlKind,
  RolloutListEntry,
  RolloutRef,
  RolloutStatusResult,
  StartResult,
} from './rollouts';
export { workflowLink, workflowListLink } from './links';

export class KeelsonClient {
  private constructor(readonly ctx: KeelsonContext) {}

  /** Connects with settings from the environment by default (TEMPORAL_*, KEELSON_CLUSTER, KEELSON_TASK_QUEUE). */
  static async connect(
    settings: ClientSettings = loadClientSettings(),
    log?: (line: string) => void,
  ): Promise<KeelsonClient> {
    return new KeelsonClient(await connect(settings, log));
  }

  // `actor` names who asks (the API passes its token's name) and is kept in the workflow's history.
  startRollout(spec: RolloutSpec, actor = DEFAULT_ACTOR) {
    return rollouts.startRollout(this.ctx, spec, actor);
  }
  applyRollout(spec: RolloutSpec, actor = DEFAULT_ACTOR) {
    return rollouts.applyRollout(this.ctx, spec, actor);
  }
  updateSpec(name: string, spec: RolloutSpec, actor = DEFAULT_ACTOR) {
    return rollouts.updateSpec(this.ctx, name, spec, actor);
  }
  control(name: string, kind: rollouts.ControlKind, who: Actor) {
    return rollouts.controlRollout(this.ctx, name, kind, who);
  }
  pause(name: string, actor: string, reason: string) {
    return this.control(name, 'pause', { actor, reason });
  }
  resume(name: string, actor: string, reason: string) {
    return this.control(name, 'resume', { actor, reason });
  }
  disable(name: string, actor: string, reason: string) {
    return this.control(name, 'disable', { actor, reason });
  }
  enable(name: string, actor: string, reason: string) {
    return this.control(name, 'enable', { actor, reason });
  }
  resetBatches(name: string, who: Actor) {
    return rollouts.resetBatches(this.ctx, name, who);
  }
  deleteRollout(name: string, actor = DEFAULT_ACTOR) {
    return rollouts.deleteRollout(this.ctx, name, actor);
  }
  rolloutStatus(name: string) {
    return rollouts.rolloutStatus(this.ctx, name);
  }
  listRollouts() {
    return rollouts.listRollouts(this.ctx);
  }
  nodeStatus(node: string) {
    return nodes.nodeStatus(this.ctx, node);
  }
  rerun(node: string, rollout: string, pkg: string, stage?: string, actor = DEFAULT_ACTOR) {
    return nodes.rerun(this.ctx, node, { rollout, package: pkg, ...(stage !== undefined && { stage }), actor });
  }
  reset(node: string, rollout: string, actor = DEFAULT_ACTOR) {
    return nodes.reset(this.ctx, node, rollout, actor);
  }
  /** Checks that Temporal answers (the API's /healthz). */
  async ping(): Promise<void> {
    await this.ctx.connection.withDeadline(Date.now() + 5_000, () => this.ctx.connection.healthService.check({}));
  }
  async close(): Promise<void> {
    this.ctx.credentials.close();
    await this.ctx.connection.close();
  }
}
