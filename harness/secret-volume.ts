import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A directory laid out as the kubelet lays out a Secret volume, and updated as it updates one: each version of the
// files in a `..<n>` directory, `..data` a symlink to the current one, each file name a symlink through `..data`.
// An update writes a new version and swaps `..data` in one rename, so the files themselves are never written.

export interface SecretVolume {
  dir: string;
  path(name: string): string;
  update(files: Record<string, string | Buffer>): void;
}

export function secretVolume(files: Record<string, string | Buffer>): SecretVolume {
  const dir = mkdtempSync(join(tmpdir(), 'keelson-secret-'));
  let version = 0;
  const write = (next: Record<string, string | Buffer>) => {
    const versionDir = `..${++version}`;
    mkdirSync(join(dir, versionDir));
    for (const [name, content] of Object.entries(next)) writeFileSync(join(dir, versionDir, name), content);
    symlinkSync(versionDir, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (version > 1) rmSync(join(dir, `..${version - 1}`), { recursive: true });
  };
  write(files);
  for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(dir, name));
  return { dir, path: (name) => join(dir, name), update: write };
}
