import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { replayCheck } from '../../workers/versioning';
import { testWorkflowBundle } from '../../harness/workflow-bundle';

// The check a new worker build passes before it takes the running workflows over (docs/operations.md, "Upgrading
// Keelson"): it replays their histories against its own code. A build that would not replay one is refused.

interface RecordedHistory {
  workflowId: string;
  history: { events: Record<string, unknown>[] };
}

const read = (name: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/histories', name), 'utf8')) as RecordedHistory;

beforeAll(() => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Another test file in this worker installed it already.
  }
});

test('the upgrade check replays running histories and names each one the build does not replay', async () => {
  const good = read('node-versions.json');
  // What a build that renamed an activity, without a patch, would meet in a history written by the build before.
  const changed = read('rollout-image-policy.json');
  const scheduled = changed.history.events.find((e) => e.activityTaskScheduledEventAttributes) as {
    activityTaskScheduledEventAttributes: { activityType: { name: string } };
  };
  expect(scheduled).toBeDefined();
  scheduled.activityTaskScheduledEventAttributes.activityType.name = 'renamedActivity';

  const source = { workflowBundle: testWorkflowBundle() };
  const histories = [good, changed].map((h) => ({ workflowId: h.workflowId, history: historyFromJSON(h.history) }));
  const check = await replayCheck(source, histories);
  expect(check.replayed).toBe(2);
  expect(check.failures).toHaveLength(1);
  expect(check.failures[0]).toMatch(new RegExp(`^${changed.workflowId}: DeterminismViolationError: .*renamedActivity`));

  expect(await replayCheck(source, [histories[0]!])).toEqual({ replayed: 1, failures: [] });
}, 120_000);
