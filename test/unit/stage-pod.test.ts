import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { containerEnded, latestPod, logContainer } from '../../api/stage-pod';

// Which pod and container `keelson logs` reads.

const terminated = (name: string, exitCode: number): V1ContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode } },
});
const waiting = (name: string, reason: string): V1ContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason } },
});
const running = (name: string): V1ContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: true,
  restartCount: 0,
  state: { running: {} },
});

function stagePod(inits: V1ContainerStatus[], mains: V1ContainerStatus[]): V1Pod {
  return {
    metadata: { name: 'p' },
    spec: {
      initContainers: [{ name: 'pkg-init' }, { name: 'pkg-apply' }],
      containers: [{ name: 'pkg-applycheck' }],
    },
    status: { initContainerStatuses: inits, containerStatuses: mains },
  };
}

test('the latest pod by creation time', () => {
  const pod = (name: string, at: string): V1Pod => ({ metadata: { name, creationTimestamp: new Date(at) } });
  expect(latestPod([])).toBeUndefined();
  expect(
    latestPod([pod('a', '2026-01-01T00:00:00Z'), pod('b', '2026-01-01T00:00:05Z'), pod('c', '2026-01-01T00:00:01Z')])
      ?.metadata?.name,
  ).toBe('b');
});

test("the stage's agent container once it started; the one that failed; the last started before it", () => {
  const all = ['pkg-init', 'pkg-apply', 'pkg-applycheck'];
  expect(
    logContainer(stagePod([terminated('pkg-init', 0), terminated('pkg-apply', 0)], [terminated('pkg-applycheck', 0)])),
  ).toEqual({ name: 'pkg-apply', containers: all });
  expect(
    logContainer(stagePod([terminated('pkg-init', 0), terminated('pkg-apply', 0)], [terminated('pkg-applycheck', 1)])),
  ).toEqual({ name: 'pkg-applycheck', containers: all });
  expect(logContainer(stagePod([running('pkg-init'), waiting('pkg-apply', 'PodInitializing')], []))).toEqual({
    name: 'pkg-init',
    containers: all,
  });
  expect(logContainer(stagePod([waiting('pkg-init', 'ErrImagePull')], []))).toEqual({
    name: 'pkg-apply',
    containers: all,
    waiting: 'not started',
  });
  expect(logContainer(stagePod([waiting('pkg-init', 'ErrImagePull')], []), 'pkg-init')).toEqual({
    name: 'pkg-init',
    containers: all,
    waiting: 'ErrImagePull',
  });
});

test('an interrupt pod has one container; a container the pod lacks is refused, naming those it has', () => {
  const interrupt: V1Pod = {
    metadata: { name: 'i' },
    spec: { containers: [{ name: 'interrupt' }] },
    status: { containerStatuses: [running('interrupt')] },
  };
  expect(logContainer(interrupt)).toEqual({ name: 'interrupt', containers: ['interrupt'] });
  expect(() => logContainer(stagePod([], []), 'nope')).toThrow(
    'container: "nope" is not a container of pod p; it has pkg-init, pkg-apply, pkg-applycheck',
  );
});

test('a container has ended once terminated; running, waiting or crash-looping it has not', () => {
  const pod = stagePod(
    [terminated('pkg-init', 0), running('pkg-apply')],
    [waiting('pkg-applycheck', 'PodInitializing')],
  );
  expect(containerEnded(pod, 'pkg-init')).toBe(true);
  expect(containerEnded(pod, 'pkg-apply')).toBe(false);
  expect(containerEnded(pod, 'pkg-applycheck')).toBe(false);
  const looping = { ...waiting('pkg-apply', 'CrashLoopBackOff'), lastState: { terminated: { exitCode: 1 } } };
  expect(containerEnded(stagePod([terminated('pkg-init', 0), looping], []), 'pkg-apply')).toBe(false);
});
