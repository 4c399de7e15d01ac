import { promotionAction, type PromotionView } from '../../model/worker-promotion';

// A versioned worker's next move (docs/operations.md, "Upgrading Keelson").

const view = (over: Partial<PromotionView> = {}): PromotionView => ({
  current: 'v1',
  registered: true,
  servedBefore: false,
  newer: true,
  ...over,
});

test('a new build checks, then takes over from the build it checked under', () => {
  expect(promotionAction('check', view(), 'v2', undefined)).toEqual({ action: 'check', step: 'check' });
  expect(promotionAction('promote', view(), 'v2', 'v1')).toEqual({ action: 'promote', step: 'promote' });
  expect(promotionAction('promote', view({ current: 'v2' }), 'v2', 'v1')).toEqual({ action: 'ready', step: 'follow' });
  // The first build of a deployment: nothing current, nothing to replay but what runs unversioned.
  expect(promotionAction('promote', view({ current: undefined }), 'v1', undefined).action).toBe('promote');
});

test('a build checks again when another became current during its check: it has not replayed what that one wrote', () => {
  expect(promotionAction('promote', view({ current: 'v3' }), 'v2', 'v1')).toEqual({ action: 'check', step: 'check' });
});

test('an old build, or one that served before, never takes the workflows back by itself', () => {
  expect(promotionAction('check', view({ current: 'v2', newer: false }), 'v1', undefined)).toEqual({
    action: 'stand-by',
    step: 'follow',
  });
  expect(promotionAction('promote', view({ current: 'v2', servedBefore: true }), 'v1', 'v2').action).toBe('stand-by');
  // Once following (manual promotion, or after standing by), it only reports.
  expect(promotionAction('follow', view({ current: 'v3' }), 'v4', undefined)).toEqual({
    action: 'stand-by',
    step: 'follow',
  });
  expect(promotionAction('follow', view({ current: 'v4' }), 'v4', undefined).action).toBe('ready');
});

test('nothing is decided before the deployment knows the build', () => {
  expect(promotionAction('check', view({ registered: false }), 'v2', undefined)).toEqual({
    action: 'wait',
    step: 'check',
  });
});
