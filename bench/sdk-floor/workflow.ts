import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

// The shape of a node workflow's stage, with nothing of Keelson's in it: each step runs a local activity (the
// node-state write) in the workflow task that schedules an activity (the stage), then waits for the stage.

/** `steps` stages of `stageMs` one after the other, each with a write of `writeMs` in its task (none at 0). */
export async function floorSteps(steps: number, stageMs: number, writeMs: number): Promise<void> {
  const { stage } = proxyActivities<FloorActivities>({ startToCloseTimeout: stageMs + 60_000 });
  const { write } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: writeMs + 60_000 });
  for (let step = 0; step < steps; step++) {
    const written = writeMs > 0 ? write(step) : undefined;
    const staged = stage(step);
    await written;
    await staged;
  }
}
