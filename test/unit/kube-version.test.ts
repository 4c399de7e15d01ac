import {
  checkKubeFloor,
  compareKubeVersions,
  kubeFloor,
  KUBE_FEATURES,
  parseKubeVersion,
} from '../../model/kube-version';

describe('G8 Kubernetes version floor (pure)', () => {
  test('the floor is the newest feature Keelson uses: 1.31 (podFailurePolicy GA)', () => {
    expect(kubeFloor()).toEqual({ major: 1, minor: 31, patch: 0 });
    expect(KUBE_FEATURES.map((f) => f.name)).toContain('Job spec.podFailurePolicy');
  });

  test('parses gitVersion, managed-cloud suffixes and major/minor fallbacks', () => {
    expect(parseKubeVersion({ gitVersion: 'v1.37.2' })).toEqual({ major: 1, minor: 37, patch: 2 });
    expect(parseKubeVersion({ gitVersion: 'v1.31.4-eks-1a2b3c' })).toEqual({ major: 1, minor: 31, patch: 4 });
    expect(parseKubeVersion({ major: '1', minor: '30+' })).toEqual({ major: 1, minor: 30, patch: 0 });
    expect(parseKubeVersion({ gitVersion: 'garbage' })).toBeUndefined();
  });

  test('compares by major, minor, patch', () => {
    expect(compareKubeVersions({ major: 1, minor: 31, patch: 0 }, { major: 1, minor: 30, patch: 9 })).toBeGreaterThan(
      0,
    );
    expect(compareKubeVersions({ major: 1, minor: 9, patch: 0 }, { major: 1, minor: 10, patch: 0 })).toBeLessThan(0);
    expect(compareKubeVersions({ major: 2, minor: 0, patch: 0 }, { major: 1, minor: 99, patch: 0 })).toBeGreaterThan(0);
  });

  test('a server at the floor or above is accepted', () => {
    expect(checkKubeFloor({ major: 1, minor: 31, patch: 0 })).toEqual({ ok: true });
    expect(checkKubeFloor({ major: 1, minor: 37, patch: 2 })).toEqual({ ok: true });
  });

  test('a server below the floor is refused, naming what is missing and the version needed', () => {
    const check = checkKubeFloor({ major: 1, minor: 28, patch: 3 });
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.message).toContain("Kubernetes 1.28.3 is below Keelson's floor 1.31");
    expect(check.message).toContain('Job spec.podFailurePolicy (needs 1.31');
    expect(check.message).toContain('Job spec.podReplacementPolicy (needs 1.29');
    expect(check.message).not.toContain('spec.suspend');
  });
});
