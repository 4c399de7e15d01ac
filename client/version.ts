import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// Keelson's version: the `version` of the nearest package.json above this file. That is the repository's in a
// checkout, /app/package.json in the image, and the CLI package's own (made from the repository's, same version)
// when installed from its tarball, so one number is kept in one place.

let cached: string | undefined;

export function keelsonVersion(): string {
  if (cached !== undefined) return cached;
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
      if (typeof version !== 'string') throw new Error(`${file}: has no "version" string`);
      return (cached = version);
    }
    if (dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}: cannot tell Keelson's version`);
  }
}
