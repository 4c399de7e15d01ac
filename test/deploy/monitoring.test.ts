import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot, toolPaths } from '../../deploy/dev/paths';
import { kubeClients, testNamespace } from '../../harness/kube';
import { eventually } from '../../harness/wait';
import { applyDocs, chart, helmRefusal, helmTemplate, removeChart, type Doc } from './chart-env';

// The chart's monitoring objects (ServiceMonitors, PrometheusRule, Grafana dashboard ConfigMap): rendered only when
// their value is on, carrying the values, refusing bad ones with the value named, and applied to the local
// apiserver with trimmed Prometheus Operator definitions (test/fixtures/prometheus-operator) under strict field
// validation.

const { kc, core } = kubeClients();
const release = `km${Date.now().toString(36)}`;
const kubectl = path.join(toolPaths().kubeBin, 'kubectl');
const fixtures = path.join(projectRoot, 'test', 'fixtures', 'prometheus-operator');
const TOKEN = 'monitoring.serviceMonitor.apiTokenSecret.name=keelson-scrape';
const ALL = ['monitoring.serviceMonitor.enabled=true', TOKEN, 'monitoring.rules.enabled=true'];

let namespace = '';
const render = (...sets: string[]) => helmTemplate(release, namespace, ...sets);
const monitoringKinds = (docs: Doc[]) =>
  docs
    .filter((d) => ['ServiceMonitor', 'PrometheusRule'].includes(d.kind) || d.metadata.name.endsWith('-dashboard'))
    .map((d) => `${d.kind}/${d.metadata.name}`)
    .sort();
const one = (docs: Doc[], kind: string, suffix: string) => {
  const found = docs.filter((d) => d.kind === kind && d.metadata.name.endsWith(suffix));
  expect(found.map((d) => d.metadata.name)).toHaveLength(1);
  return found[0]!;
};

const refusal = (...sets: string[]) => helmRefusal(release, ...sets);

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
}
const rulesOf = (doc: Doc) => (doc.spec as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

beforeAll(async () => {
  namespace = await testNamespace(core, 'kmon');
});

afterAll(async () => {
  await removeChart(kc, release, namespace);
});

describe('monitoring objects in the chart', () => {
  test('none by default; each value turns on its own objects', () => {
    expect(monitoringKinds(render())).toEqual([]);
    expect(monitoringKinds(render('monitoring.serviceMonitor.enabled=true', TOKEN))).toEqual([
      `ServiceMonitor/${release}-keelson-api`,
      `ServiceMonitor/${release}-keelson-worker`,
    ]);
    expect(monitoringKinds(render('monitoring.rules.enabled=true'))).toEqual([`PrometheusRule/${release}-keelson`]);
    expect(monitoringKinds(render('monitoring.dashboard.enabled=true'))).toEqual([
      `ConfigMap/${release}-keelson-dashboard`,
    ]);
    expect(monitoringKinds(render('monitoring.serviceMonitor.enabled=true', 'api.enabled=false'))).toEqual([
      `ServiceMonitor/${release}-keelson-worker`,
    ]);
  });

  test("the ServiceMonitors select the metrics Services and their ports, the API's with its token Secret", () => {
    const docs = render(...ALL, 'monitoring.labels.release=kps', 'monitoring.serviceMonitor.interval=15s');
    for (const [component, service, ports] of [
      ['worker', '-worker-metrics', ['metrics', 'sdk-metrics']],
      ['api', '-api', ['http']],
    ] as const) {
      const monitor = one(docs, 'ServiceMonitor', `-${component}`);
      const svc = one(docs, 'Service', service);
      const spec = monitor.spec as {
        namespaceSelector: { matchNames: string[] };
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; path: string; interval: string; authorization?: unknown }[];
      };
      expect(spec.namespaceSelector.matchNames).toEqual([namespace]);
      expect(svc.metadata.labels).toMatchObject(spec.selector.matchLabels);
      // The selector tells the worker's Service from the API's.
      expect(spec.selector.matchLabels['app.kubernetes.io/component']).toBe(component);
      const servicePorts = (svc.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
      expect(spec.endpoints.map((e) => e.port)).toEqual(ports);
      for (const e of spec.endpoints) {
        expect(servicePorts).toContain(e.port);
        expect([e.path, e.interval]).toEqual(['/metrics', '15s']);
      }
      expect(monitor.metadata.labels?.release).toBe('kps');
    }
    const api = one(docs, 'ServiceMonitor', '-api').spec as { endpoints: { authorization: unknown }[] };
    expect(api.endpoints[0]!.authorization).toEqual({
      type: 'Bearer',
      credentials: { name: 'keelson-scrape', key: 'token' },
    });
    const worker = one(render(...ALL, 'monitoring.serviceMonitor.sdkMetrics=false'), 'ServiceMonitor', '-worker');
    expect((worker.spec as { endpoints: { port: string }[] }).endpoints.map((e) => e.port)).toEqual(['metrics']);
  });

  test('the PrometheusRule carries the thresholds, the severity and the release namespace', () => {
    const rule = one(
      render(
        ...ALL,
        'monitoring.rules.stalledSeconds=1200',
        'monitoring.rules.erroringSeconds=45',
        'monitoring.rules.permitHeldSeconds=5400',
        'monitoring.rules.severity=critical',
      ),
      'PrometheusRule',
      '-keelson',
    );
    const rules = new Map(rulesOf(rule).map((r) => [r.alert, r]));
    expect([...rules.keys()]).toEqual(['KeelsonRolloutStalled', 'KeelsonNodesErroring', 'KeelsonPermitHeldTooLong']);
    expect(rules.get('KeelsonRolloutStalled')!.expr).toMatch(/\) > 1200 and on /);
    expect(rules.get('KeelsonRolloutStalled')!.expr).toContain('status!~"complete|paused|disabled"');
    expect(rules.get('KeelsonNodesErroring')!.for).toBe('45s');
    expect(rules.get('KeelsonPermitHeldTooLong')!.expr).toMatch(/\) > 5400$/);
    for (const r of rules.values()) {
      expect([r.alert, r.labels.severity]).toEqual([r.alert, 'critical']);
      expect([r.alert, r.expr]).toEqual([r.alert, expect.stringContaining(`{namespace="${namespace}"`)]);
    }
    // Prometheus' own templates reach the rule untouched by Helm's.
    expect(JSON.stringify(rule)).toContain('{{ $labels.rollout }}');
  });

  test('bad values are refused with the value named', () => {
    for (const bad of ['0', '-5', '1.5', 'soon']) {
      expect(refusal('monitoring.rules.enabled=true', `monitoring.rules.stalledSeconds=${bad}`)).toContain(
        `monitoring.rules.stalledSeconds must be a positive whole number of seconds, got ${bad}`,
      );
    }
    expect(refusal('monitoring.rules.enabled=true', 'monitoring.rules.permitHeldSeconds=0')).toContain(
      'monitoring.rules.permitHeldSeconds must be a positive whole number of seconds, got 0',
    );
    expect(refusal('monitoring.rules.enabled=true', 'monitoring.rules.severity=')).toContain(
      'monitoring.rules.severity must not be empty',
    );
    expect(refusal('monitoring.serviceMonitor.enabled=true')).toContain(
      'monitoring.serviceMonitor.apiTokenSecret.name is required with the API on',
    );
  });

  test("the dashboard ConfigMap holds the chart's dashboard file under the sidecar's label", () => {
    const map = one(
      render('monitoring.dashboard.enabled=true', 'monitoring.dashboard.annotations.grafana_folder=Ops'),
      'ConfigMap',
      '-dashboard',
    );
    expect(map.metadata.labels?.grafana_dashboard).toBe('1');
    expect(map.metadata.annotations).toEqual({ grafana_folder: 'Ops' });
    const file = fs.readFileSync(path.join(chart, 'files', 'grafana', 'keelson.json'), 'utf8');
    expect(map.data).toEqual({ 'keelson.json': file });
    expect((JSON.parse(file) as { uid: string }).uid).toBe('keelson');
  });

  test('the apiserver accepts them, with strict field validation, next to the rest of the chart', async () => {
    const env = { ...process.env };
    execFileSync(kubectl, ['apply', '--server-side', '--force-conflicts', '-f', fixtures], { env, stdio: 'pipe' });
    execFileSync(
      kubectl,
      ['wait', '--for=condition=Established', '--timeout=60s', '-f', path.join(fixtures, 'servicemonitors.yaml')],
      { env, stdio: 'pipe' },
    );
    execFileSync(
      kubectl,
      ['wait', '--for=condition=Established', '--timeout=60s', '-f', path.join(fixtures, 'prometheusrules.yaml')],
      { env, stdio: 'pipe' },
    );
    const docs = render(...ALL, 'monitoring.dashboard.enabled=true', 'worker.replicas=0', 'api.replicas=0');
    // A definition just established may answer 429 for a moment while its storage starts.
    const out = await eventually('the monitoring objects to apply', () => applyDocs(docs), 30_000);
    expect(out).toContain(`servicemonitor.monitoring.coreos.com/${release}-keelson-worker serverside-applied`);
    expect(out).toContain(`servicemonitor.monitoring.coreos.com/${release}-keelson-api serverside-applied`);
    expect(out).toContain(`prometheusrule.monitoring.coreos.com/${release}-keelson serverside-applied`);
    expect(out).toContain(`configmap/${release}-keelson-dashboard serverside-applied`);
    // The definitions do refuse a misplaced field: the check above is not vacuous.
    const rule = one(docs, 'PrometheusRule', '-keelson');
    const misspelt = { ...rule, spec: { groups: [{ name: 'x', rules: [{ expr: 'up', fr: '5m' }] }] } };
    expect(() => applyDocs([misspelt])).toThrow(/rules\[0\]\.fr\b/);
  });

  test("with the API on HTTPS, its ServiceMonitor scrapes https, verified by the TLS Secret's CA, and applies", () => {
    // Runs after the test above, which established the ServiceMonitor definition.
    const monitor = one(render(...ALL, 'api.tls.secret=keelson-api-tls'), 'ServiceMonitor', '-api');
    const [endpoint] = (monitor.spec as { endpoints: Record<string, unknown>[] }).endpoints;
    expect(endpoint).toMatchObject({
      port: 'http',
      scheme: 'https',
      tlsConfig: {
        ca: { secret: { name: 'keelson-api-tls', key: 'ca.crt' } },
        serverName: `${release}-keelson-api.${namespace}.svc`,
      },
    });
    expect(applyDocs([monitor])).toContain(
      `servicemonitor.monitoring.coreos.com/${release}-keelson-api serverside-applied`,
    );
  });
});
