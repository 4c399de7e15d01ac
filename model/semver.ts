// Semantic versions as golang.org/x/mod/semver reads them once a `v` is prepended (what Skyhook's webhook does):
// the shorthands `1` and `1.2` stand for `1.0.0` and `1.2.0`, but only without a prerelease or build suffix.

export interface SemVer {
  major: string;
  minor: string;
  patch: string;
  prerelease: string[];
}

const NUM = '(0|[1-9][0-9]*)';
const IDENT = '[0-9A-Za-z-]+';
const FULL = new RegExp(`^v?${NUM}\\.${NUM}\\.${NUM}(?:-(${IDENT}(?:\\.${IDENT})*))?(?:\\+${IDENT}(?:\\.${IDENT})*)?$`);
const SHORT = new RegExp(`^v?${NUM}(?:\\.${NUM})?$`);

export function parseVersion(version: string): SemVer | undefined {
  const full = FULL.exec(version);
  if (full) {
    const prerelease = full[4] === undefined ? [] : full[4].split('.');
    // Numeric prerelease identifiers may not have leading zeros (SemVer 2.0.0, item 9).
    if (prerelease.some((id) => /^0[0-9]+$/.test(id))) return undefined;
    return { major: full[1]!, minor: full[2]!, patch: full[3]!, prerelease };
  }
  const short = SHORT.exec(version);
  if (short) return { major: short[1]!, minor: short[2] ?? '0', patch: '0', prerelease: [] };
  return undefined;
}

export function isValidVersion(version: string): boolean {
  return parseVersion(version) !== undefined;
}

function compareNumeric(a: string, b: string): number {
  return a.length !== b.length ? Math.sign(a.length - b.length) : a < b ? -1 : a > b ? 1 : 0;
}

function compareIdentifier(a: string, b: string): number {
  const an = /^[0-9]+$/.test(a);
  const bn = /^[0-9]+$/.test(b);
  if (an && bn) return compareNumeric(a, b);
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** -1, 0 or 1. Both arguments must be valid versions; build metadata is ignored, as semver requires. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  if (!x || !y) throw new Error(`compareVersions: invalid version ${JSON.stringify(x ? b : a)}`);
  const core = compareNumeric(x.major, y.major) || compareNumeric(x.minor, y.minor) || compareNumeric(x.patch, y.patch);
  if (core !== 0) return core;
  if (x.prerelease.length === 0 || y.prerelease.length === 0) {
    return Math.sign(y.prerelease.length) - Math.sign(x.prerelease.length);
  }
  for (let i = 0; i < Math.min(x.prerelease.length, y.prerelease.length); i++) {
    const c = compareIdentifier(x.prerelease[i]!, y.prerelease[i]!);
    if (c !== 0) return c;
  }
  return Math.sign(x.prerelease.length - y.prerelease.length);
}
