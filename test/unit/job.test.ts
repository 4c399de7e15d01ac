import fc from 'fast-check';
import {
  buildInterruptJob,
  buildStageConfigMaps,
  buildStageJob,
  packageConfigMapName,
  parseRolloutDocuments,
  RUN_ANNOTATION,
  safeLabelValue,
  safeName,
  stageJobName,
  STAGES,
  type JobContext,
  type Package,
} from '../../model';

const { rollouts } = parseRolloutDocuments([
  {
    apiVersion: 'skyhook.nvidia.com/v1alpha1',
    kind: 'Skyhook',
    metadata: { name: 'demo' },
    spec: {
      packages: {
        dexter: {
          version: '1.2.3',
          image: 'registry.local:5000/nvidia/agentless',
          env: [{ name: 'SLEEP_LEN', value: '1' }],
          configMap: { a: 'b' },
          resources: { cpuRequest: '100m', cpuLimit: '200m', memoryRequest: '64Mi', memoryLimit: '128Mi' },
          gracefulShutdown: '45s',
          interrupt: { type: 'reboot' },
        },
      },
    },
  },
]);
const pkg: Package = rollouts[0]!.spec.packages['dexter']!;
const ctx: JobContext = {
  rollout: 'demo',
  rolloutUid: 'uid1',
  generation: 3,
  node: 'worker-1',
  namespace: 'keelson',
  agentImage: 'nvcr.io/nvidia/skyhook/agent:v6.4.1',
  copyDirRoot: '/var/lib/skyhook',
  agentLogRoot: '/var/log/skyhook',
  imagePullSecret: 'pull',
  additionalTolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
  nodeMetadataConfigMap: 'demo-worker-1-metadata',
  backoffLimit: 3,
  activeDeadlineSeconds: 600,
};

describe('names', () => {
  test('deterministic, DNS-safe, at most 57 so child pods stay within 63, distinct for distinct keys', () => {
    const part = fc.string({ minLength: 1, maxLength: 120 });
    fc.assert(
      fc.property(part, part, part, fc.constantFrom(...STAGES), part, (rollout, p, version, stage, node) => {
        const name = stageJobName({ rollout, package: p, version, stage, node });
        expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        expect(name.length).toBeLessThanOrEqual(57);
        expect(`${name}-abcde`.length).toBeLessThanOrEqual(63);
        expect(stageJobName({ rollout, package: p, version, stage, node })).toBe(name);
        expect(stageJobName({ rollout, package: p, version: `${version}x`, stage, node })).not.toBe(name);
      }),
    );
    expect(stageJobName({ rollout: 'demo', package: 'dexter', version: '1.2.3', stage: 'apply', node: 'w1' })).toMatch(
      /^demo-dexter-1-2-3-apply-w1-[0-9a-f]{8}$/,
    );
  });

  test('label values stay within 63 and valid; valid short values are kept', () => {
    expect(safeLabelValue('1.2.3')).toBe('1.2.3');
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (v) => {
        expect(safeLabelValue(v)).toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
        expect(safeLabelValue(v).length).toBeLessThanOrEqual(63);
      }),
    );
    expect(safeName(20, 'A.B', 'c')).toMatch(/^a-b-c-[0-9a-f]{8}$/);
  });
});

describe('stage Job (§3.1 as a Job)', () => {
  const job = buildStageJob(ctx, pkg, 'apply');
  const pod = job.spec.template.spec;

  test('Job settings: backoff, disruptions ignored, deadline, replacement only when failed', () => {
    expect(job.spec).toMatchObject({
      backoffLimit: 3,
      activeDeadlineSeconds: 600,
      podReplacementPolicy: 'Failed',
      podFailurePolicy: { rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] }] },
    });
    expect(pod).toMatchObject({
      nodeName: 'worker-1',
      restartPolicy: 'Never',
      hostPID: true,
      hostNetwork: true,
      terminationGracePeriodSeconds: 45,
      imagePullSecrets: [{ name: 'pull' }],
    });
  });

  test('stage and interrupt pods get no service-account token (the agent needs no Kubernetes API access)', () => {
    expect(pod.automountServiceAccountToken).toBe(false);
    const interrupt = buildInterruptJob(ctx, pkg, { type: 'reboot' });
    expect(interrupt.spec.template.spec.automountServiceAccountToken).toBe(false);
  });

  test('finished Jobs stay for the retention as their TTL; retention 0 or unset sets no TTL (G3)', () => {
    expect(job.spec.ttlSecondsAfterFinished).toBeUndefined();
    expect(buildStageJob({ ...ctx, retentionSeconds: 0 }, pkg, 'apply').spec.ttlSecondsAfterFinished).toBeUndefined();
    expect(buildStageJob({ ...ctx, retentionSeconds: 3600 }, pkg, 'apply').spec.ttlSecondsAfterFinished).toBe(3600);
    const reboot = pkg.interrupt!;
    expect(buildInterruptJob({ ...ctx, retentionSeconds: 60 }, pkg, reboot).spec.ttlSecondsAfterFinished).toBe(60);
  });

  test('labels identify rollout, package, version, stage and node', () => {
    expect(job.metadata.labels).toEqual({
      'keelson.dev/rollout': 'demo',
      'keelson.dev/package': 'dexter',
      'keelson.dev/version': '1.2.3',
      'keelson.dev/stage': 'apply',
      'keelson.dev/node': 'worker-1',
      'keelson.dev/generation': '3',
    });
    expect(JSON.parse(job.metadata.annotations['keelson.dev/package']!)).toMatchObject({
      name: 'dexter',
      stage: 'apply',
      node: 'worker-1',
    });
  });

  test('containers: package image copies, agent runs stage then check, with env and resources', () => {
    const dir = '/var/lib/skyhook/demo/dexter-1.2.3-uid1-3';
    expect(pod.initContainers.map((c) => [c.name, c.image, c.args ?? null])).toEqual([
      ['dexter-init', 'registry.local:5000/nvidia/agentless:1.2.3', null],
      ['dexter-apply', ctx.agentImage, ['apply', '/root', dir]],
    ]);
    expect(pod.containers.map((c) => [c.name, c.args])).toEqual([['dexter-applycheck', ['apply-check', '/root', dir]]]);
    const env = pod.containers[0]!.env.map((e) => `${e.name}=${e.value}`);
    expect(env).toEqual([
      'SKYHOOK_LOG_DIR=/var/log/skyhook/demo',
      'SKYHOOK_ROOT_DIR=/var/lib/skyhook/demo',
      'COPY_RESOLV=false',
      'SKYHOOK_RESOURCE_ID=demo-uid1-3_dexter_1.2.3',
      'SLEEP_LEN=1',
    ]);
    expect(pod.initContainers[0]!.resources).toEqual({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { cpu: '200m', memory: '128Mi' },
    });
    expect(pod.volumes.map((v) => v.name)).toEqual(['root-mount', 'metadata', 'package-config']);
    expect(pod.tolerations.map((t) => t.key)).toEqual(['node.kubernetes.io/unschedulable', 'nvidia.com/gpu']);
  });

  test('uninstall runs without the package env, resources and configMap (§3.7)', () => {
    const u = buildStageJob(ctx, pkg, 'uninstall').spec.template.spec;
    expect(u.containers[0]!.env.map((e) => e.name)).not.toContain('SLEEP_LEN');
    expect(u.containers[0]!.resources).toBeUndefined();
    expect(u.volumes.map((v) => v.name)).toEqual(['root-mount', 'metadata']);
  });

  test('containerSHA pins the package image by digest', () => {
    const sha = `sha256:${'a'.repeat(64)}`;
    expect(
      buildStageJob(ctx, { ...pkg, containerSHA: sha }, 'config').spec.template.spec.initContainers[0]!.image,
    ).toBe(`registry.local:5000/nvidia/agentless@${sha}`);
  });
});

describe('stage ConfigMaps', () => {
  const node = { labels: { zone: 'a' }, annotations: { note: 'x' } };

  test('the node metadata the agent reads, and the package configMap under the name the Job mounts', () => {
    const [metadata, config] = buildStageConfigMaps(ctx, pkg, node);
    expect(metadata!.metadata.name).toBe(ctx.nodeMetadataConfigMap);
    expect(buildStageJob(ctx, pkg, 'apply').spec.template.spec.volumes).toContainEqual({
      name: 'package-config',
      configMap: { name: config!.metadata.name },
    });
    expect(config).toEqual({
      metadata: { name: packageConfigMapName('demo', pkg), labels: { 'keelson.dev/rollout': 'demo' } },
      data: { a: 'b' },
    });
    expect(JSON.parse(metadata!.data['labels.json']!)).toEqual({ zone: 'a' });
    expect(JSON.parse(metadata!.data['annotations.json']!)).toEqual({ note: 'x' });
    const packages = JSON.parse(metadata!.data['packages.json']!) as { agentVersion: string; packages: object };
    expect(packages.agentVersion).toBe('v6.4.1');
    expect(packages.packages).toMatchObject({
      dexter: { name: 'dexter', version: '1.2.3', interrupt: { type: 'reboot' } },
    });
  });

  test('no package ConfigMap for a package without configMap', () => {
    const bare = { ...pkg, configMap: {} };
    expect(buildStageConfigMaps(ctx, bare, node).map((c) => c.metadata.name)).toEqual([ctx.nodeMetadataConfigMap]);
  });
});

describe('interrupt Job', () => {
  test('needs no image pull after the interrupt: one agent container, IfNotPresent (G5)', () => {
    const job = buildInterruptJob(ctx, pkg, { type: 'reboot' });
    const pod = job.spec.template.spec;
    expect(pod.initContainers).toEqual([]);
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0]).toMatchObject({
      name: 'interrupt',
      image: ctx.agentImage,
      imagePullPolicy: 'IfNotPresent',
    });
    expect(pod.restartPolicy).toBe('OnFailure');
    expect(job.spec.podFailurePolicy).toBeUndefined();
    expect(pod.tolerations).toEqual(
      expect.arrayContaining([{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }]),
    );
    expect(job.metadata.labels['keelson.dev/stage']).toBe('interrupt');
    expect(job.metadata.name).toMatch(/^demo-interrupt-reboot-worker-1-[0-9a-f]{8}$/);
  });
});

describe('run annotation (G11)', () => {
  test('stage and interrupt Jobs name the run that made them; without a run ID they carry none, as before', () => {
    expect(RUN_ANNOTATION).toBe('keelson.dev/run');
    const run = { ...ctx, runId: 'run-7' };
    const [stage, interrupt] = [buildStageJob(run, pkg, 'apply'), buildInterruptJob(run, pkg, { type: 'reboot' })];
    const [oldStage, oldInterrupt] = [
      buildStageJob(ctx, pkg, 'apply'),
      buildInterruptJob(ctx, pkg, { type: 'reboot' }),
    ];
    expect(stage.metadata.annotations[RUN_ANNOTATION]).toBe('run-7');
    expect(interrupt.metadata.annotations[RUN_ANNOTATION]).toBe('run-7');
    // The name stays the stage's: a rerun finds the earlier run's Job under it and tells it is not its own.
    expect(stage.metadata.name).toBe(oldStage.metadata.name);
    expect(interrupt.metadata.name).toBe(oldInterrupt.metadata.name);
    expect(oldStage.metadata.annotations).not.toHaveProperty([RUN_ANNOTATION]);
    expect(oldInterrupt.metadata.annotations).not.toHaveProperty([RUN_ANNOTATION]);
  });

  test("a run's agent resource ID is its own, so a rerun's interrupt is not skipped by the last run's flags", () => {
    const resourceId = (j: ReturnType<typeof buildStageJob>) =>
      j.spec.template.spec.containers.flatMap((c) => c.env ?? []).find((e) => e.name === 'SKYHOOK_RESOURCE_ID')?.value;
    const first = resourceId(buildInterruptJob({ ...ctx, runId: 'run-7' }, pkg, { type: 'reboot' }));
    const rerun = resourceId(buildInterruptJob({ ...ctx, runId: 'run-9' }, pkg, { type: 'reboot' }));
    expect(first).toContain('run-7');
    expect(rerun).not.toBe(first);
    // Without a run ID (an older workflow) it is the generation-scoped ID it always was.
    expect(resourceId(buildStageJob(ctx, pkg, 'apply'))).toBe(
      `${ctx.rollout}-${ctx.rolloutUid}-${ctx.generation}_${pkg.name}_${pkg.version}`,
    );
  });
});
