import { RolloutSpecSchema } from '../../model';
import { imageAllowed, imagePolicyErrors, OPEN_IMAGE_POLICY, type ImagePolicy } from '../../model/image-policy';
import { imagePolicyOf, ImagePolicySettingsSchema } from '../../workers/image-policy-settings';

// The image policy (model/image-policy.ts) and its settings, without I/O.

const spec = (packages: Record<string, unknown>) =>
  RolloutSpecSchema.parse({
    name: 'r',
    kind: 'Skyhook',
    paused: false,
    disabled: false,
    spec: { packages },
    policy: null,
    resetBatchStateOnCompletion: false,
  });

const SHA = `sha256:${'b'.repeat(64)}`;

test('a prefix allows what starts with it at a path, tag or digest boundary, never a longer host', () => {
  expect(imageAllowed('registry.example/team/a:1', ['registry.example/team/'])).toBe(true);
  expect(imageAllowed('registry.example/team/a:1', ['registry.example'])).toBe(true);
  expect(imageAllowed('registry.example.evil/team/a:1', ['registry.example'])).toBe(false);
  expect(imageAllowed('registry.example/teammate/a:1', ['registry.example/team'])).toBe(false);
  expect(imageAllowed('registry.example/team/a@' + SHA, ['registry.example/team/a'])).toBe(true);
  expect(imageAllowed('anything/at:all', [])).toBe(true);
});

test('the open policy allows everything', () => {
  const s = spec({
    pa: { version: '1.0.0', image: 'docker.io/x/y', env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 's' } } }] },
  });
  expect(imagePolicyErrors(s, OPEN_IMAGE_POLICY)).toEqual([]);
});

test('every breach is named: image, agent override, digest, Secret; allowed ones pass', () => {
  const policy: ImagePolicy = {
    allowedPrefixes: ['registry.example/ok/'],
    requireDigest: true,
    allowedSecrets: ['lic'],
  };
  const s = spec({
    good: {
      version: '1.0.0',
      image: 'registry.example/ok/good',
      containerSHA: SHA,
      env: [
        { name: 'A', valueFrom: { secretKeyRef: { name: 'lic', key: 'k' } } },
        { name: 'B', valueFrom: { configMapKeyRef: { name: 'anything', key: 'k' } } },
        { name: 'C', value: 'plain' },
      ],
    },
    bad: {
      version: '2.0.0',
      image: 'ghcr.io/other/bad',
      agentImageOverride: 'ghcr.io/other/agent:1',
      env: [{ name: 'D', valueFrom: { secretKeyRef: { name: 'root-creds', key: 'k' } } }],
    },
  });
  expect(imagePolicyErrors(s, policy, 'Skyhook/r.spec.packages')).toEqual([
    {
      path: 'Skyhook/r.spec.packages.bad.image',
      message:
        '"ghcr.io/other/bad" is outside the image policy; allowed: registry.example/ok/ (KEELSON_IMAGE_ALLOWED_PREFIXES)',
    },
    {
      path: 'Skyhook/r.spec.packages.bad.containerSHA',
      message: 'is required: the image policy pins images by digest (KEELSON_IMAGE_REQUIRE_DIGEST)',
    },
    {
      path: 'Skyhook/r.spec.packages.bad.agentImageOverride',
      message:
        '"ghcr.io/other/agent:1" is outside the image policy; allowed: registry.example/ok/ (KEELSON_IMAGE_ALLOWED_PREFIXES)',
    },
    {
      path: 'Skyhook/r.spec.packages.bad.agentImageOverride',
      message:
        '"ghcr.io/other/agent:1" has no @sha256: digest, which the image policy requires (KEELSON_IMAGE_REQUIRE_DIGEST)',
    },
    {
      path: 'Skyhook/r.spec.packages.bad.env[0].valueFrom.secretKeyRef.name',
      message: '"root-creds" is not an allowed Secret; allowed: lic (KEELSON_ENV_SECRET_ALLOWLIST)',
    },
  ]);
});

test('an empty Secret allow-list refuses every Secret reference', () => {
  const s = spec({
    pa: { version: '1.0.0', image: 'x/y', env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
  });
  expect(imagePolicyErrors(s, { ...OPEN_IMAGE_POLICY, allowedSecrets: [] })).toEqual([
    {
      path: 'spec.packages.pa.env[0].valueFrom.secretKeyRef.name',
      message: '"s" is not an allowed Secret; allowed: none (KEELSON_ENV_SECRET_ALLOWLIST)',
    },
  ]);
});

test('settings: lists split on commas, "-" allows no Secret, unset allows any, bad values are named', () => {
  const of = (env: Record<string, string>) => imagePolicyOf(ImagePolicySettingsSchema.parse(env));
  expect(of({})).toEqual({ allowedPrefixes: [], requireDigest: false });
  expect(
    of({
      KEELSON_IMAGE_ALLOWED_PREFIXES: 'registry.example/a/, registry.example/b/',
      KEELSON_IMAGE_REQUIRE_DIGEST: 'true',
      KEELSON_ENV_SECRET_ALLOWLIST: 'lic,tls.keys',
    }),
  ).toEqual({
    allowedPrefixes: ['registry.example/a/', 'registry.example/b/'],
    requireDigest: true,
    allowedSecrets: ['lic', 'tls.keys'],
  });
  expect(of({ KEELSON_ENV_SECRET_ALLOWLIST: '-' }).allowedSecrets).toEqual([]);
  const bad = ImagePolicySettingsSchema.safeParse({ KEELSON_ENV_SECRET_ALLOWLIST: 'Not_A_Name' });
  expect(bad.success).toBe(false);
  expect(bad.error!.issues.map((i) => [i.path[0], i.message])).toContainEqual([
    'KEELSON_ENV_SECRET_ALLOWLIST',
    'must be Secret names separated by commas, or - for none',
  ]);
});
