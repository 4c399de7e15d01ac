// What a versioned worker does next about its build (docs/operations.md, "Upgrading Keelson"), from what its Worker
// Deployment says. Pure: workers/versioning.ts carries it out.

/** Where the worker is: about to replay the running workflows, about to make its build current, or only following. */
export type PromotionStep = 'check' | 'promote' | 'follow';

export interface PromotionView {
  /** The current build's ID, if any. */
  current?: string;
  /** The deployment knows this build (its pollers have been seen). */
  registered: boolean;
  /** This build has been current before. */
  servedBefore: boolean;
  /** This build was first seen after the current one (or there is none). */
  newer: boolean;
}

/**
 * - `ready`: the build is current;
 * - `wait`: nothing can be decided yet;
 * - `check`: replay the running workflows (then step `promote`, remembering the current build the check was made under);
 * - `promote`: make the build current, if the deployment is still as it was read;
 * - `stand-by`: not current, and not taking over by itself.
 */
export type PromotionAction = 'ready' | 'wait' | 'check' | 'promote' | 'stand-by';

/**
 * A build takes over once, when it is new, and only from the build whose histories it replayed: if another became
 * current meanwhile, the histories that build wrote were not replayed, and the check is made again. One that served
 * before (an old pod restarting) or is older than the current one stands by.
 */
export function promotionAction(
  step: PromotionStep,
  view: PromotionView,
  buildId: string,
  checkedUnder: string | undefined,
): { action: PromotionAction; step: PromotionStep } {
  if (view.current === buildId) return { action: 'ready', step: 'follow' };
  if (!view.registered) return { action: 'wait', step };
  if (step === 'follow' || view.servedBefore || !view.newer) return { action: 'stand-by', step: 'follow' };
  if (step === 'promote' && view.current === checkedUnder) return { action: 'promote', step };
  return { action: 'check', step: 'check' };
}
