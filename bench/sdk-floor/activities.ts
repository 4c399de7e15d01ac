import { setTimeout as sleep } from 'node:timers/promises';

/** The floor bench's activities: a stage that takes `stageMs`, a write that takes `writeMs` (a PATCH's round trip). */
export function floorActivities(stageMs: number, writeMs: number) {
  return {
    async stage(_step: number): Promise<void> {
      await sleep(stageMs);
    },
    async write(_step: number): Promise<void> {
      await sleep(writeMs);
    },
  };
}

export type FloorActivities = ReturnType<typeof floorActivities>;
