import { NetworkingV1Api } from '@kubernetes/client-node';
import { kubeClients, testNamespace } from '../../harness/kube';
import { applyDocs, helmRefusal, helmTemplate, removeChart, type Doc } from './chart-env';

// The chart's API over TLS and its Ingress: the TLS Secret and the client CA Secret mounted where the API's settings
// point, probes and the Service speaking HTTPS, an Ingress carrying its values, bad values refused with the value
// named, and the whole applied to the local apiserver with strict field validation.

const { kc, core } = kubeClients();
const release = `ka${Date.now().toString(36)}`;
const TLS = ['api.tls.secret=keelson-api-tls', 'api.tls.clientCASecret=keelson-api-client-ca'];
const INGRESS = [
  'api.ingress.enabled=true',
  'api.ingress.className=nginx',
  'api.ingress.host=keelson.example.com',
  'api.ingress.tlsSecret=keelson-example-com',
  'api.ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/backend-protocol=HTTPS',
];

let namespace = '';
const render = (...sets: string[]) => helmTemplate(release, namespace, ...sets);
const one = (docs: Doc[], kind: string, suffix: string) => {
  const found = docs.filter((d) => d.kind === kind && d.metadata.name.endsWith(suffix));
  expect(found.map((d) => d.metadata.name)).toHaveLength(1);
  return found[0]!;
};

interface Container {
  env: { name: string; value?: string }[];
  volumeMounts: { name: string; mountPath: string }[];
  readinessProbe: { httpGet: { scheme?: string } };
  livenessProbe: { httpGet: { scheme?: string } };
}
interface PodSpec {
  containers: Container[];
  volumes: { name: string; secret?: { secretName: string } }[];
}
const apiPod = (docs: Doc[]) => (one(docs, 'Deployment', '-api').spec as { template: { spec: PodSpec } }).template.spec;
const envOf = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e.value]));
const servicePort = (docs: Doc[]) =>
  (one(docs, 'Service', '-api').spec as { ports: { appProtocol?: string }[] }).ports[0]!;

const refusal = (...sets: string[]) => helmRefusal(release, ...sets);

beforeAll(async () => {
  namespace = await testNamespace(core, 'kapitls');
});

afterAll(async () => {
  await removeChart(kc, release, namespace);
});

describe('the API over TLS in the chart', () => {
  test('by default: plain HTTP, no TLS settings or volumes, no Ingress', () => {
    const docs = render();
    const pod = apiPod(docs);
    const env = envOf(pod.containers[0]!);
    expect(Object.keys(env).filter((k) => k.startsWith('KEELSON_API_TLS_'))).toEqual([]);
    expect(pod.volumes.map((v) => v.name)).toEqual(['api-tokens']);
    expect(pod.containers[0]!.readinessProbe.httpGet.scheme).toBe('HTTP');
    expect(servicePort(docs).appProtocol).toBe('http');
    expect(docs.filter((d) => d.kind === 'Ingress')).toEqual([]);
  });

  test("api.tls.secret and api.tls.clientCASecret are mounted where the API's settings point; probes use HTTPS", () => {
    const docs = render(...TLS);
    const pod = apiPod(docs);
    const container = pod.containers[0]!;
    expect(envOf(container)).toMatchObject({
      KEELSON_API_TLS_CERT_FILE: '/etc/keelson/api-tls/tls.crt',
      KEELSON_API_TLS_KEY_FILE: '/etc/keelson/api-tls/tls.key',
      KEELSON_API_TLS_CLIENT_CA_FILE: '/etc/keelson/api-client-ca/ca.crt',
    });
    expect(pod.volumes.map((v) => [v.name, v.secret?.secretName])).toEqual([
      ['api-tokens', 'keelson-api-tokens'],
      ['api-tls', 'keelson-api-tls'],
      ['api-client-ca', 'keelson-api-client-ca'],
    ]);
    expect(container.volumeMounts.map((m) => [m.name, m.mountPath])).toEqual([
      ['api-tokens', '/etc/keelson/api-tokens'],
      ['api-tls', '/etc/keelson/api-tls'],
      ['api-client-ca', '/etc/keelson/api-client-ca'],
    ]);
    expect(container.readinessProbe.httpGet.scheme).toBe('HTTPS');
    expect(container.livenessProbe.httpGet.scheme).toBe('HTTPS');
    expect(servicePort(docs).appProtocol).toBe('https');
  });

  test('the Ingress carries its class, host, TLS Secret and annotations, and routes to the API Service', () => {
    const ingress = one(render(...INGRESS), 'Ingress', '-api');
    expect(ingress.metadata.annotations).toEqual({ 'nginx.ingress.kubernetes.io/backend-protocol': 'HTTPS' });
    expect(ingress.spec).toEqual({
      ingressClassName: 'nginx',
      tls: [{ hosts: ['keelson.example.com'], secretName: 'keelson-example-com' }],
      rules: [
        {
          host: 'keelson.example.com',
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: `${release}-keelson-api`, port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    });
    // Neither class nor TLS Secret: the default IngressClass, TLS left to the controller.
    expect(one(render('api.ingress.enabled=true', 'api.ingress.host=k.example.com'), 'Ingress', '-api').spec).toEqual({
      rules: [expect.objectContaining({ host: 'k.example.com' })],
    });
  });

  test.each([
    [['api.tls.clientCASecret=ca'], 'api.tls.clientCASecret ("ca") needs api.tls.secret'],
    [['api.ingress.enabled=true'], 'api.ingress.host is required when api.ingress.enabled is true'],
    [
      ['api.ingress.enabled=true', 'api.ingress.host=Keelson_API'],
      `api.ingress.host "Keelson_API" must be a DNS name: lowercase letters, digits, '-' and '.'`,
    ],
    [
      ['api.ingress.enabled=true', 'api.ingress.host=k.example.com', 'api.ingress.className=Nginx'],
      `api.ingress.className "Nginx" must be an IngressClass name`,
    ],
    [
      ['api.ingress.enabled=true', 'api.ingress.host=k.example.com', 'api.ingress.annotations=x'],
      'api.ingress.annotations must be a map of annotation names to strings, got x',
    ],
    [
      ['api.ingress.enabled=true', 'api.ingress.host=k.example.com', 'api.enabled=false'],
      'api.ingress.enabled needs api.enabled',
    ],
    [
      [
        ...TLS,
        'monitoring.serviceMonitor.enabled=true',
        'monitoring.serviceMonitor.apiTokenSecret.name=keelson-scrape',
      ],
      'monitoring.serviceMonitor.enabled with api.tls.clientCASecret ("keelson-api-client-ca"): the API\'s /metrics would need a client certificate',
    ],
  ])('values %j are refused naming the value', (sets, message) => {
    expect(refusal(...sets)).toContain(message);
  });

  test('the apiserver accepts the TLS Deployment, Service and Ingress with strict field validation', async () => {
    const docs = render(...TLS, ...INGRESS, 'worker.replicas=0', 'api.replicas=0');
    const out = applyDocs(docs);
    expect(out).toContain(`ingress.networking.k8s.io/${release}-keelson-api serverside-applied`);
    expect(out).toContain(`deployment.apps/${release}-keelson-api serverside-applied`);
    const stored = await kc
      .makeApiClient(NetworkingV1Api)
      .readNamespacedIngress({ name: `${release}-keelson-api`, namespace });
    expect(stored.spec?.rules?.[0]?.host).toBe('keelson.example.com');
    expect(stored.spec?.tls?.[0]?.secretName).toBe('keelson-example-com');
    // The validation is strict: a misspelt field is refused, so the acceptance above means every field is known.
    const ingress = one(docs, 'Ingress', '-api');
    const misspelt = { ...ingress, spec: { ...ingress.spec, ingressClass: 'nginx' } };
    expect(() => applyDocs([misspelt])).toThrow(/\.spec\.ingressClass: field not declared in schema/);
  });
});
