import {
  API_OWNER,
  CONTROLLER_ACTOR,
  describeOwner,
  legacyOwner,
  nameTakenMessage,
  resourceOwner,
  RolloutOwnerSchema,
} from '../../model/custom-resource/ownership';

// Who owns a rollout (model/custom-resource/ownership.ts): recorded at its start, or for a rollout started before
// owners were recorded, read from who started it and the kind it runs.

test('a resource kind owns as its GroupKind; the API as `api`; nothing else is an owner', () => {
  expect(resourceOwner('Skyhook')).toBe('Skyhook.skyhook.nvidia.com');
  expect(resourceOwner('NodeWright')).toBe('NodeWright.nodewright.nvidia.com');
  expect(RolloutOwnerSchema.options).toEqual([API_OWNER, resourceOwner('Skyhook'), resourceOwner('NodeWright')]);
  expect(RolloutOwnerSchema.safeParse('Skyhook.nodewright.nvidia.com').success).toBe(false);
});

test('a rollout without a recorded owner belongs to the kind it runs if the controller started it, else to the API', () => {
  expect(legacyOwner(CONTROLLER_ACTOR, 'Skyhook')).toBe('Skyhook.skyhook.nvidia.com');
  expect(legacyOwner(CONTROLLER_ACTOR, 'NodeWright')).toBe('NodeWright.nodewright.nvidia.com');
  expect(legacyOwner('api', 'Skyhook')).toBe(API_OWNER);
  expect(legacyOwner('ci-bot', 'NodeWright')).toBe(API_OWNER);
  expect(legacyOwner(undefined, 'Skyhook')).toBe(API_OWNER);
});

test('the owner is named as a person reads it, in the NameTaken message', () => {
  expect(describeOwner('NodeWright.nodewright.nvidia.com', 'foo')).toBe('NodeWright/foo (nodewright.nvidia.com)');
  expect(describeOwner(API_OWNER, 'foo')).toBe('the API (keelson rollout start or POST /v1/rollouts)');
  expect(nameTakenMessage('foo', 'Skyhook.skyhook.nvidia.com')).toBe(
    'rollout foo is owned by Skyhook/foo (skyhook.nvidia.com): this resource does not steer it, and deleting this ' +
      'resource leaves it running; rename one of them, or delete the owner to hand the name over',
  );
});
