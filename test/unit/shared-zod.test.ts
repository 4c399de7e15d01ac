import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { bundledModules, root } from './workflow-imports';

// Every workflow of a worker shares one zod, which the SDK deep-freezes (docs/architecture.md, "Changing a workflow").
// A zod call that writes to zod's own state then fails in every workflow task that reaches it, and what freezing does
// not reach (a registry's map) would be shared between workflows. None may be in a module the workflow bundle includes.

const SHARED_STATE_CALLS: { pattern: RegExp; why: string }[] = [
  {
    pattern:
      /\.(email|uuid|guid|url|httpUrl|hostname|emoji|nanoid|cuid2?|ulid|xid|ksuid|ipv4|ipv6|mac|cidrv4|cidrv6|base64|base64url|e164|jwt|lowercase|uppercase|datetime|isoDate|isoTime|isoDuration|hex|hash)\(/,
    why: "a string format checked with one of zod's frozen regular expressions (its check resets their lastIndex)",
  },
  { pattern: /\bz\.config\(/, why: "zod's frozen global config" },
  {
    pattern: /\.(meta|describe|register)\(|globalRegistry|z\.registry\(/,
    why: "zod's registry, shared by every workflow",
  },
];

test('a frozen zod regular expression fails every parse of the string format that uses it', () => {
  expect(z.string().lowercase().parse('abc')).toBe('abc');
  // As the SDK's deep freeze leaves it once zod is shared.
  Object.freeze(z.regexes.lowercase);
  expect(() => z.string().lowercase().parse('abc')).toThrow(/lastIndex/);
});

test('no module of the workflow bundle uses zod state that the shared copy freezes or shares', () => {
  const modules = bundledModules({ lazy: true });
  // The walk reaches the model's schemas and both workflows (a walk that found nothing would pass on nothing).
  expect(modules).toEqual(
    expect.arrayContaining(['workflows/node/workflow.ts', 'workflows/rollout/workflow.ts', 'model/node-state.ts']),
  );
  const found = modules.flatMap((file) =>
    readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        SHARED_STATE_CALLS.filter(({ pattern }) => pattern.test(line)).map(
          ({ why }) => `${file}:${i + 1}: ${line.trim()} (${why})`,
        ),
      ),
  );
  expect(found).toEqual([]);
});
