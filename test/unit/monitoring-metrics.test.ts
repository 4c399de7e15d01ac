import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { createMetrics } from '../../api/metrics';
import { KeelsonMetrics } from '../../workers/metrics';
import { exposedNames, metricNames } from './promql';

// Every metric the chart's Grafana dashboard and alerts query is one the worker or the API registers: a renamed or
// dropped metric fails here instead of leaving an empty panel or an alert that can never fire.

const files = path.join(__dirname, '..', '..', 'deploy', 'helm', 'keelson', 'files');

/** Every `expr` of the dashboard's panels and targets, and the metric queries of its variables. */
function dashboardQueries(): string[] {
  const dashboard = JSON.parse(fs.readFileSync(path.join(files, 'grafana', 'keelson.json'), 'utf8')) as unknown;
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'expr' && typeof x === 'string') out.push(x);
        else walk(x);
      }
    }
  };
  walk(dashboard);
  const variables = (dashboard as { templating: { list: { definition?: string }[] } }).templating.list;
  for (const { definition } of variables) {
    const labelValues = definition?.match(/^label_values\((.+),\s*\w+\)$/);
    if (labelValues) out.push(labelValues[1]!);
  }
  return out;
}

/** Every alert's expression, with the chart's `{{ ... }}` (namespace, thresholds) as a number. */
function ruleQueries(): { alert: string; expr: string }[] {
  const spec = YAML.parse(fs.readFileSync(path.join(files, 'prometheus-rules.yaml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return spec.groups.flatMap((g) => g.rules).map((r) => ({ alert: r.alert, expr: r.expr.replace(/{{.*?}}/g, '1') }));
}

async function exported(): Promise<Set<string>> {
  const registries = [new KeelsonMetrics({ processMetrics: true }).registry, createMetrics().registry];
  const metrics = (await Promise.all(registries.map((r) => r.getMetricsAsJSON()))).flat();
  return new Set(metrics.flatMap((m) => exposedNames({ name: m.name, type: String(m.type) })));
}

describe('metric names of the dashboard and the alerts', () => {
  test('the name extraction keeps metrics and drops functions, labels, ranges, variables and keywords', () => {
    expect(
      metricNames(
        'histogram_quantile(0.9, sum by (le, stage) (rate(a_bucket{namespace="$namespace", x=~"a|b"}[$__rate_interval])))' +
          ' and on (rollout) (time() - min without (pod) (b_seconds offset 5m)) > 3600 or c:recorded == bool 1e3',
      ).sort(),
    ).toEqual(['a_bucket', 'b_seconds', 'c:recorded']);
  });

  test('every metric the dashboard queries is exported', async () => {
    const names = await exported();
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThanOrEqual(20);
    const used = new Set(queries.flatMap(metricNames));
    expect([...used].filter((n) => !names.has(n))).toEqual([]);
    // The panels the dashboard promises: rollouts, nodes, stages, permits, API and worker health.
    for (const name of [
      'keelson_rollout_status',
      'keelson_node_status_count',
      'keelson_stage_duration_seconds_bucket',
      'keelson_interrupt_permit_held_seconds',
      'keelson_api_requests_total',
      'keelson_process_process_resident_memory_bytes',
    ]) {
      expect(used).toContain(name);
    }
  });

  test('every metric the alerts query is exported', async () => {
    const names = await exported();
    const rules = ruleQueries();
    expect(rules.map((r) => r.alert)).toEqual([
      'KeelsonRolloutStalled',
      'KeelsonNodesErroring',
      'KeelsonPermitHeldTooLong',
    ]);
    for (const { alert, expr } of rules) {
      const used = metricNames(expr);
      expect([alert, used.length > 0]).toEqual([alert, true]);
      expect([alert, used.filter((n) => !names.has(n))]).toEqual([alert, []]);
    }
  });
});
