import os from 'node:os';
import { cachedWorkflowsFor, memoryLimitBytes } from '../../workers/sizing';
import { chartNodeOptions, workerContainer } from '../../bench/lib/container-env';

const MiB = 1024 * 1024;

describe('worker sizing', () => {
  test("the container's cgroup limit wins over the machine's memory; v2 first, then v1", () => {
    const v2 = { '/sys/fs/cgroup/memory.max': String(1024 * MiB) };
    expect(memoryLimitBytes((p) => v2[p as keyof typeof v2])).toBe(1024 * MiB);
    const v1 = { '/sys/fs/cgroup/memory/memory.limit_in_bytes': String(512 * MiB) };
    expect(memoryLimitBytes((p) => v1[p as keyof typeof v1])).toBe(512 * MiB);
  });

  test("no limit, 'max', or a limit above the machine's memory: the machine's memory", () => {
    expect(memoryLimitBytes(() => undefined)).toBe(os.totalmem());
    expect(memoryLimitBytes(() => 'max')).toBe(os.totalmem());
    expect(memoryLimitBytes(() => '9223372036854771712')).toBe(os.totalmem());
  });

  test('the cache fits three quarters of the limit, or the heap when smaller, at 1.5 MiB a workflow past 300 MiB', () => {
    const bigHeap = 64 * 1024 * MiB;
    expect(cachedWorkflowsFor(1024 * MiB, bigHeap)).toBe(312);
    expect(cachedWorkflowsFor(2048 * MiB, bigHeap)).toBe(824);
    // A 4Gi container whose heap is held at 768 MiB: the heap bounds the cache.
    expect(cachedWorkflowsFor(4096 * MiB, 768 * MiB)).toBe(312);
  });

  test('never below 50 (above the 40 workflow tasks at once) nor above 2000', () => {
    expect(cachedWorkflowsFor(256 * MiB, 64 * 1024 * MiB)).toBe(50);
    expect(cachedWorkflowsFor(24 * 1024 * MiB, 64 * 1024 * MiB)).toBe(2000);
  });

  test("the bench's container: the chart's V8 options, the heap at three quarters of the limit, the cache from it", () => {
    const chart = (options: string) => `worker:\n  env:\n    NODE_OPTIONS: '${options}'\n`;
    expect(chartNodeOptions(chart('--max-old-space-size=768'))).toEqual([]);
    expect(chartNodeOptions(chart('--max_old_space_size=768  --stack-size=2000'))).toEqual(['--stack-size=2000']);
    expect(() => chartNodeOptions('worker: {}')).toThrow('worker.env.NODE_OPTIONS is not a string');
    expect(workerContainer('640', ['--stack-size=2000'])).toEqual({
      limitBytes: 640 * MiB,
      env: { NODE_OPTIONS: '--stack-size=2000 --max-old-space-size=480', KEELSON_MAX_CACHED_WORKFLOWS: '120' },
    });
    expect(workerContainer('none')).toBeUndefined();
    expect(() => workerContainer('100')).toThrow(
      '--worker-memory-mib takes a whole number of MiB from 256 up, or none, got 100',
    );
  });
});
