import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

// The shape of a node workflow's stage, with nothing of Keelson's in it: each step runs a local activity (the
// node-state write) in the workflow task that schedules an activity (the stage), then waits for the stage.

const { stage } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
const { write } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

/** `steps` stages one after the other, each with a write in its task unless `withWrite` is false. */
export async function floorSteps(steps: number, withWrite: boolean): Promise<void> {
  for (let step = 0; step < steps; step++) {
    const written = withWrite ? write(step) : undefined;
    const staged = stage(step);
    await written;
    await staged;
  }
}
