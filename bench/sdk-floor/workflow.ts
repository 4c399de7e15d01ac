import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

// The shape of a node workflow's stage, with nothing of Keelson's in it: each step runs a local activity (the
// node-state write) in the workflow task that schedules an activity (the stage), then waits for the stage.

const { stage } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
const { write } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

export async function floorSteps(steps: number): Promise<void> {
  for (let step = 0; step < steps; step++) {
    const written = write(step);
    const staged = stage(step);
    await written;
    await staged;
  }
}
