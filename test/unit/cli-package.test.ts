import type { LocalStack } from '../../cli/commands/dev';
import * as stack from '../../deploy/dev/stack';
import { packageNameOf, requiredSpecifiers, runtimeDependencies } from '../../scripts/cli-package';

// The CLI package (`npm run pack:cli`): what it carries is what the compiled CLI requires, and only from the
// repository's run-time dependencies. test/cli/package.test.ts installs and runs it.

test('the require calls tsc writes, and the package each bare one names', () => {
  const js = 'const a = require("commander");\nconst b = __importDefault(require("yaml/util"));\nrequire("./x");';
  expect(requiredSpecifiers(js)).toEqual(['commander', 'yaml/util', './x']);
  expect(['@scope/name/sub', 'name/sub', 'name'].map(packageNameOf)).toEqual(['@scope/name', 'name', 'name']);
});

test('dependencies: the repository ranges of what is required; built-ins left out; dev or missing ones refused', () => {
  const root = { dependencies: { zod: '^4.6.7', yaml: '^2.9.1' }, devDependencies: { tsx: '^4.23.15' } };
  expect(runtimeDependencies(['node:fs', 'path', 'zod', 'yaml/util', 'zod'], root)).toEqual({
    dependencies: { yaml: '^2.9.1', zod: '^4.6.7' },
  });
  expect(runtimeDependencies(['tsx/cjs', 'left-pad'], root)).toEqual({
    errors: [
      'left-pad: the CLI loads it at run time, but package.json does not depend on it',
      'tsx: the CLI loads it at run time, but package.json has it in devDependencies only',
    ],
  });
});

test('keelson dev loads deploy/dev/stack by path: the module still has the shape the command expects', () => {
  // A compile-time check as much as a run-time one: the assignment fails typecheck when deploy/dev/stack drifts.
  const shaped: LocalStack = stack;
  expect(Object.keys(shaped)).toEqual(expect.arrayContaining(['stackUp', 'stackDown', 'stackEnv']));
});
