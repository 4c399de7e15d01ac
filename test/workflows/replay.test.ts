import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import fs from 'node:fs';
import path from 'node:path';

// Histories recorded from the workflow tests (KEELSON_RECORD_HISTORIES=1) replay against the current code: a change
// that reorders or drops a command fails here with a DeterminismViolationError.

const dir = path.join(__dirname, '../fixtures/histories');
const fixtures = fs.existsSync(dir)
  ? fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];

test('recorded histories are committed', () => {
  expect(fixtures.length).toBeGreaterThanOrEqual(3);
});

test('every recorded history replays without non-determinism', async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Another test file in this worker installed it already.
  }
  const histories = fixtures.map((f) => {
    const { workflowId, history } = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    return { workflowId: workflowId as string, history: historyFromJSON(history) };
  });
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowsPath: require.resolve('../../workflows') },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
});
