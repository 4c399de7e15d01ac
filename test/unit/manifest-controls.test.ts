import { manifestControls } from '../../model/manifests/controls';
import { parseRolloutDocuments } from '../../model/manifests/parse-documents';

// The pause and disable a rollout manifest asks for, read from its raw annotations and spec.pause, so that a
// manifest failing validation still pauses or disables its running rollout.

test("each kind reads its own group's annotations, only the value true counts", () => {
  const both = { 'skyhook.nvidia.com/pause': 'true', 'skyhook.nvidia.com/disable': 'true' };
  expect(manifestControls('Skyhook', both, undefined)).toEqual({ paused: true, disabled: true });
  expect(manifestControls('NodeWright', both, undefined)).toEqual({ paused: false, disabled: false });
  expect(manifestControls('NodeWright', { 'nodewright.nvidia.com/disable': 'true' }, false)).toEqual({
    paused: false,
    disabled: true,
  });
  expect(manifestControls('Skyhook', { 'skyhook.nvidia.com/pause': 'yes' }, undefined).paused).toBe(false);
});

test('spec.pause pauses only as the boolean true, whatever else the spec holds', () => {
  expect(manifestControls('Skyhook', {}, true).paused).toBe(true);
  expect(manifestControls('Skyhook', {}, 'true').paused).toBe(false);
});

test('a valid manifest parses to the same pause and disable', () => {
  const annotations = { 'nodewright.nvidia.com/pause': 'true' };
  const parsed = parseRolloutDocuments([
    {
      apiVersion: 'nodewright.nvidia.com/v1alpha1',
      kind: 'NodeWright',
      metadata: { name: 'r', annotations },
      spec: { packages: { hello: { version: '1.0.0', image: 'registry.example/hello' } } },
    },
  ]);
  expect(parsed.errors).toEqual([]);
  const spec = parsed.rollouts[0];
  expect({ paused: spec!.paused, disabled: spec!.disabled }).toEqual(
    manifestControls('NodeWright', annotations, false),
  );
});
