import { busyShare, machineTimes } from '../../bench/lib/cpu';
import {
  apiserverLatency,
  apiserverMeanMs,
  jobToPod,
  parseApiserverMetrics,
  podToRunning,
  runBeyondSim,
  runningBeyondSim,
  type JobRecord,
} from '../../bench/lib/fleet';

// The bench's split of a stage's time past its simulated seconds, and its load figures: pure arithmetic over what the
// watches and the apiserver's metrics recorded.

function stage(stage: string, times: Partial<JobRecord>): JobRecord {
  return {
    uid: stage,
    name: stage,
    node: 'n1',
    package: 'p',
    version: '1',
    stage,
    simSeconds: 2,
    seenCreated: 0,
    ...times,
  };
}

describe('bench figures', () => {
  const jobs = [
    stage('apply', { seenPod: 100, seenRunning: 400, seenComplete: 2900 }),
    stage('config', { seenPod: 300, seenRunning: 500, seenComplete: 3100 }),
    // A reboot is not a stage's run: left out of every split.
    stage('interrupt', { seenPod: 5000, seenRunning: 9000, seenComplete: 20000 }),
    // A pod whose Running the watch never showed (coalesced events) counts in run - sim only.
    stage('post-interrupt', { seenPod: 200, seenComplete: 2800 }),
  ];

  it('splits run - sim into Job to pod, pod to Running and Running to done less the simulated seconds', () => {
    expect(runBeyondSim(jobs)).toEqual({ p50: 900, p95: 1100 });
    expect(jobToPod(jobs)).toEqual({ p50: 200, p95: 300 });
    expect(podToRunning(jobs)).toEqual({ p50: 200, p95: 300 });
    expect(runningBeyondSim(jobs)).toEqual({ p50: 500, p95: 600 });
  });

  it('measures from the stage created where there is no Job (an operator stage pod)', () => {
    const pod = stage('apply', { seenRunning: 700, seenComplete: 3000 });
    expect(jobToPod([pod]).p50).toBeNaN();
    expect(podToRunning([pod]).p50).toBe(700);
    expect(runningBeyondSim([pod]).p50).toBe(300);
  });

  const metrics = (start: number, lines: string[]) =>
    [
      '# HELP apiserver_request_total Counter of apiserver requests',
      `process_start_time_seconds ${start}`,
      ...lines,
      'apiserver_request_duration_seconds_bucket{verb="GET",resource="pods",le="0.1"} 7',
    ].join('\n');
  const before = parseApiserverMetrics(
    metrics(1000, [
      'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="GET",version="v1"} 10',
      'apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",verb="GET",version="v1"} 1',
      'apiserver_request_duration_seconds_count{component="apiserver",resource="pods",verb="GET",version="v1"} 10',
      'apiserver_request_duration_seconds_sum{resource="pods",subresource="status",verb="PATCH"} 2',
      'apiserver_request_duration_seconds_count{resource="pods",subresource="status",verb="PATCH"} 10',
      'apiserver_request_duration_seconds_sum{resource="pods",verb="WATCH"} 100',
      'apiserver_request_duration_seconds_count{resource="pods",verb="WATCH"} 1',
    ]),
  );
  const after = parseApiserverMetrics(
    metrics(1000, [
      'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="GET",version="v1"} 25',
      'apiserver_request_total{code="404",component="apiserver",resource="pods",verb="GET",version="v1"} 5',
      'apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",verb="GET",version="v1"} 5',
      'apiserver_request_duration_seconds_count{component="apiserver",resource="pods",verb="GET",version="v1"} 30',
      'apiserver_request_duration_seconds_sum{resource="pods",subresource="status",verb="PATCH"} 14',
      'apiserver_request_duration_seconds_count{resource="pods",subresource="status",verb="PATCH"} 30',
      'apiserver_request_duration_seconds_sum{resource="pods",verb="WATCH"} 5000',
      'apiserver_request_duration_seconds_count{resource="pods",verb="WATCH"} 3',
      'apiserver_request_duration_seconds_sum{resource="jobs",verb="POST"} 1',
      'apiserver_request_duration_seconds_count{resource="jobs",verb="POST"} 10',
    ]),
  );

  it('reads the counters by verb and resource, summing series that differ in other labels', () => {
    expect(after.requests).toEqual({ 'GET pods': 30 });
    expect(after.durationCount['PATCH pods/status']).toBe(30);
    expect(after.startTime).toBe(1000);
  });

  it("takes the apiserver's mean time per request from its histogram, watches apart, the longest kinds first", () => {
    // (4 + 12 + 1) s over (20 + 20 + 10) requests.
    expect(apiserverMeanMs(after, before)).toBe(340);
    expect(apiserverLatency(after, before).map((k) => [k.request, k.count, k.meanMs])).toEqual([
      ['PATCH pods/status', 20, 600],
      ['GET pods', 20, 200],
      ['POST jobs', 10, 100],
    ]);
    expect(apiserverMeanMs(before, before)).toBeNaN();
  });

  it('gives no latency across a restart of the apiserver, whose counters start again from zero', () => {
    const restarted = { ...after, startTime: 2000 };
    expect(apiserverMeanMs(restarted, before)).toBeNaN();
    expect(apiserverLatency(restarted, before)).toEqual([]);
  });

  it('takes a scrape without the start time for no restart', () => {
    const unknown = (x: typeof before) => ({ ...x, startTime: NaN });
    expect(apiserverMeanMs(unknown(after), unknown(before))).toBe(340);
  });

  it("gives the share of all cores' time that went to work, from /proc/stat", () => {
    // user nice system idle iowait irq softirq steal guest guest_nice
    const at = (user: number, idle: number) =>
      machineTimes(`cpu  ${user} 0 100 ${idle} 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n`);
    expect(at(300, 1000)).toEqual({ busy: 400, total: 1450 });
    expect(busyShare(at(300, 1000), at(1050, 1250))).toBe(0.75);
    expect(busyShare(at(300, 1000), at(300, 1000))).toBeNaN();
  });
});
