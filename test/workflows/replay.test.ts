import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import fs from 'node:fs';
import path from 'node:path';
import { PATCHES } from '../../workflows/patches';
import { testWorkflowBundle } from '../../harness/workflow-bundle';

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

/** The patch IDs whose marker a fixture holds: its history was recorded from the patch's new branch. */
function patchMarkers(file: string): string[] {
  const { history } = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as {
    history: {
      events: {
        markerRecordedEventAttributes?: {
          markerName: string;
          details: Record<string, { payloads: { data: string }[] }>;
        };
      }[];
    };
  };
  return history.events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') return [];
    return (marker.details['patch-data']?.payloads ?? []).map(
      (p) => (JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')) as { id: string }).id,
    );
  });
}

test('every patch in the ledger (workflows/patches.ts) has a fixture recorded from its new branch', () => {
  const recorded = new Set(fixtures.flatMap(patchMarkers));
  expect(Object.values(PATCHES).filter((id) => !recorded.has(id))).toEqual([]);
  // ... and no workflow branches on an ID the ledger does not know.
  expect([...recorded].filter((id) => !(Object.values(PATCHES) as string[]).includes(id))).toEqual([]);
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
  for await (const result of Worker.runReplayHistories({ workflowBundle: testWorkflowBundle() }, histories)) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
});
