import { nodeWorkflowId, rolloutWorkflowId, workflowIdPrefix } from '../../model/workflow-ids';

// The IDs are a public format (docs/api.md, the Temporal UI's links, visibility queries): fixed here, once.

test('workflow IDs are keelson/<cluster>/<node|rollout>/<name>', () => {
  expect(nodeWorkflowId('prod', 'gpu-1')).toBe('keelson/prod/node/gpu-1');
  expect(rolloutWorkflowId('prod', 'drivers')).toBe('keelson/prod/rollout/drivers');
  expect(workflowIdPrefix('prod')).toBe('keelson/prod/');
  expect(workflowIdPrefix('prod', 'node')).toBe('keelson/prod/node/');
  expect(nodeWorkflowId('prod', 'gpu-1').startsWith(workflowIdPrefix('prod', 'node'))).toBe(true);
  expect(rolloutWorkflowId('prod', 'drivers').startsWith(workflowIdPrefix('prod'))).toBe(true);
});
