import { condition } from '@temporalio/workflow';

// The node workflow's conditions, counted as they resolve, so a local activity's result can wait until the workflow
// is quiet (workflows/node/activities.ts, localCalls): a round of the conditions passes in which none of them
// resolved, and every coroutine an event in the same activation woke has issued its commands.

/** A round of the workflow's conditions that keeps resolving past this many is a busy loop; the wait ends anyway. */
const MAX_ROUNDS = 100;

export class NodeConditions {
  private resolved = 0;

  /** `condition(fn)`, counted when it resolves. */
  until(fn: () => boolean): Promise<void> {
    return condition(() => {
      if (!fn()) return false;
      this.resolved++;
      return true;
    });
  }

  /** Resolves in the next round of the workflow's conditions, counted as a condition of the node's. */
  nextRound(): Promise<void> {
    return this.until(trueFromNextRound());
  }

  /** Resolves after a round of the workflow's conditions in which none of the node's resolved. */
  async quiet(): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const before = this.resolved;
      await condition(trueFromNextRound());
      if (this.resolved === before) return;
    }
  }
}

/** A predicate false when first asked and true after: its condition resolves in the next round. */
function trueFromNextRound(): () => boolean {
  let asked = false;
  return () => {
    const again = asked;
    asked = true;
    return again;
  };
}
