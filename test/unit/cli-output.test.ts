import { InvalidArgumentError } from 'commander';
import YAML from 'yaml';
import { formatOf, parseOutputFormat, structured } from '../../cli/commands/output';
import type { StatusBody } from '../../cli/commands/progress';
import { nodeStatusText, rolloutListText, rolloutStatusText, type NodeBody } from '../../cli/commands/views';
import { explainErroring, reasonOf, whyLines } from '../../cli/commands/why';
import { packagesByName } from '../../client/nodes';
import type { NodeState, PackageEntry, Stage } from '../../model';
import type { ApiClient } from '../../client/http-client';

// `-o json|yaml|wide` of `rollout list`, `rollout status` and `node status`: the flag's values and what each prints.

describe('-o/--output', () => {
  test('json, yaml and wide are taken; --json alone means json; -o wins over it', () => {
    expect(OUTPUTS.map(parseOutputFormat)).toEqual(OUTPUTS);
    expect(formatOf({ json: true })).toBe('json');
    expect(formatOf({ json: true, output: 'wide' })).toBe('wide');
    expect(formatOf({})).toBeUndefined();
  });

  test('another value is a usage error naming the flag, the value and the allowed values', () => {
    expect(() => parseOutputFormat('xml')).toThrow(InvalidArgumentError);
    expect(() => parseOutputFormat('JSON')).toThrow('-o/--output: "JSON" is not allowed; use json, yaml or wide');
  });

  test('json and yaml print the same value', () => {
    const value = { rollouts: [{ name: 'drivers', packages: ['base'] }] };
    expect(JSON.parse(structured('json', value))).toEqual(value);
    expect(YAML.parse(structured('yaml', value))).toEqual(value);
    expect(structured('yaml', value)).toBe('rollouts:\n  - name: drivers\n    packages:\n      - base\n');
  });
});
const OUTPUTS = ['json', 'yaml', 'wide'] as const;

const pkg = (version: string, stage: string, state: string, restarts = 0) => ({ version, stage, state, restarts });

describe('rollout list', () => {
  const rollouts = [
    {
      name: 'drivers',
      status: 'in_progress',
      packages: ['base', 'gpu'],
      startTime: '2026-12-01T10:00:00.000Z',
      workflowId: 'keelson/c/rollout/drivers',
      runId: 'r-1',
    },
    { name: 'empty', status: 'complete', packages: [], startTime: '2026-12-01T11:00:00.000Z' },
  ];

  test('plain: name, status, packages, start; wide adds the workflow and run IDs', () => {
    expect(rolloutListText(rollouts, false)).toBe(
      [
        'NAME     STATUS       PACKAGES  STARTED',
        'drivers  in_progress  base,gpu  2026-12-01T10:00:00.000Z',
        'empty    complete     -         2026-12-01T11:00:00.000Z',
        '',
      ].join('\n'),
    );
    expect(rolloutListText(rollouts, true)).toBe(
      [
        'NAME     STATUS       PACKAGES  STARTED                   WORKFLOW ID                RUN ID',
        'drivers  in_progress  base,gpu  2026-12-01T10:00:00.000Z  keelson/c/rollout/drivers  r-1',
        'empty    complete     -         2026-12-01T11:00:00.000Z  -                          -',
        '',
      ].join('\n'),
    );
    expect(rolloutListText([], true)).toBe('no rollouts\n');
  });
});

describe('rollout status', () => {
  const status: StatusBody = {
    name: 'drivers',
    status: 'in_progress',
    generation: 2,
    paused: false,
    disabled: false,
    completeNodes: '1/3',
    nodes: {
      'node-002': {
        status: 'in_progress',
        packages: { gpu: pkg('2.0', 'apply', 'in_progress', 1), base: pkg('1.0', 'config', 'complete') },
      },
      'node-001': { status: 'complete', packages: { base: pkg('1.0', 'config', 'complete') } },
      'node-003': { status: 'waiting', packages: {} },
    },
    links: { rollout: 'http://ui/r' },
  };

  test('plain: one row a node; wide: one row a package, its fields in columns', () => {
    expect(rolloutStatusText(status, false)).toBe(
      [
        'rollout drivers: in_progress, 1/3 nodes complete, generation 2',
        'NODE      STATUS       PACKAGES',
        'node-001  complete     base@1.0 config complete',
        'node-002  in_progress  base@1.0 config complete, gpu@2.0 apply in_progress (1 restarts)',
        'node-003  waiting      -',
        'Temporal UI: http://ui/r',
        '',
      ].join('\n'),
    );
    expect(rolloutStatusText(status, true)).toBe(
      [
        'rollout drivers: in_progress, 1/3 nodes complete, generation 2',
        'NODE      STATUS       PACKAGE  VERSION  STAGE   STATE        RESTARTS',
        'node-001  complete     base     1.0      config  complete     0',
        'node-002  in_progress  base     1.0      config  complete     0',
        'node-002  in_progress  gpu      2.0      apply   in_progress  1',
        'node-003  waiting      -        -        -       -            -',
        'Temporal UI: http://ui/r',
        '',
      ].join('\n'),
    );
  });
});

describe('node status', () => {
  const node: NodeBody = {
    node: 'node-001',
    link: 'http://ui/n',
    cordonedBy: 'drivers',
    rollouts: {
      drivers: {
        status: 'in_progress',
        paused: false,
        disabled: false,
        packages: { base: { ...pkg('1.0', 'interrupt', 'in_progress'), attempts: 2 } },
      },
    },
  };

  test('plain: one row a rollout; wide: one row a package with restarts and attempts', () => {
    expect(nodeStatusText(node, false)).toBe(
      [
        'node node-001 (cordoned by drivers)',
        'ROLLOUT  STATUS       PACKAGES',
        'drivers  in_progress  base@1.0 interrupt in_progress',
        'Temporal UI: http://ui/n',
        '',
      ].join('\n'),
    );
    expect(nodeStatusText(node, true)).toBe(
      [
        'node node-001 (cordoned by drivers)',
        'ROLLOUT  STATUS       PACKAGE  VERSION  STAGE      STATE        RESTARTS  ATTEMPTS',
        'drivers  in_progress  base     1.0      interrupt  in_progress  0         2',
        'Temporal UI: http://ui/n',
        '',
      ].join('\n'),
    );
  });
});

describe('why a node is erroring, and hundreds of nodes', () => {
  const failing: NodeBody = {
    node: 'node-007',
    link: 'http://ui/n7',
    cordonedBy: 'drivers',
    rollouts: {
      drivers: {
        status: 'erroring',
        paused: false,
        disabled: false,
        packages: {
          gpu: {
            ...pkg('2.0', 'interrupt', 'erroring'),
            lastError: 'DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
          },
          base: { ...pkg('1.0', 'config', 'complete'), lastError: 'an old error of a package that went on' },
        },
      },
      tuning: {
        status: 'erroring',
        paused: false,
        disabled: false,
        packages: {
          sysctl: {
            ...pkg('1.1', 'apply', 'erroring'),
            lastError: `BackoffLimitExceeded: ted line cut by the tail\n+ set -e\nsysctl: ${'x'.repeat(300)}\n\n`,
          },
        },
      },
    },
  };

  test("node status says why each erroring package is: the reason and the log tail's last line, cut to 160 characters", () => {
    const text = nodeStatusText(failing, false);
    expect(text.split('\n').filter((l) => l.startsWith('why '))).toEqual([
      'why drivers/gpu (interrupt): DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
      `why tuning/sysctl (apply): BackoffLimitExceeded: sysctl: ${'x'.repeat(157 - 'BackoffLimitExceeded: sysctl: '.length)}...`,
    ]);
  });

  test('a reason shows control characters escaped, identical reasons once, and an erroring package without one', () => {
    expect(reasonOf('Failed: \u001b]8;;http://evil\u0007click\u001b[2J\r\tdone')).toBe(
      'Failed: \\x1b]8;;http://evil\\x07click\\x1b[2J\\x0d done',
    );
    expect(Array.from(reasonOf(`X: ${'😀'.repeat(200)}`))).toHaveLength(160);
    const interrupt = (stage: string) => ({
      ...pkg('1.0', stage, 'erroring'),
      lastError: 'RebootTimeout: node-7 did not come back',
    });
    const node: NodeBody = {
      ...failing,
      rollouts: {
        drivers: {
          status: 'erroring',
          paused: true,
          disabled: false,
          packages: { a: interrupt('interrupt'), b: interrupt('interrupt'), c: pkg('1.0', 'apply', 'erroring') },
        },
      },
    };
    expect(whyLines(node)).toEqual([
      'drivers/a (interrupt), drivers/b (interrupt): RebootTimeout: node-7 did not come back\n',
      'drivers/c (apply): (no error recorded)\n',
    ]);
  });

  test('a failed uninstall of the old version is the entry shown, not the new version waiting behind it', () => {
    const entry = (version: string, stage: Stage, state: PackageEntry['state']) =>
      ({ name: 'gpu', version, image: 'r/gpu', stage, state, restarts: 0 }) as PackageEntry;
    const failedDowngrade = packagesByName({
      'gpu|2.0': entry('2.0', 'uninstall', 'erroring'),
      'gpu|1.0': entry('1.0', 'uninstall', 'skipped'),
    } as unknown as NodeState);
    expect(failedDowngrade.gpu).toMatchObject({ version: '2.0', stage: 'uninstall', state: 'erroring' });
    const upgrading = packagesByName({
      'gpu|1.0': entry('1.0', 'uninstall', 'in_progress'),
      'gpu|2.0': entry('2.0', 'apply', 'in_progress'),
    } as unknown as NodeState);
    expect(upgrading.gpu).toMatchObject({ version: '2.0', stage: 'apply' });
  });

  test("rollout status reads the first erroring nodes' reasons from the nodes, and says how many are left", async () => {
    const nodes = Object.fromEntries(
      Array.from({ length: 7 }, (_, i) => [`node-00${i}`, { status: i === 3 ? 'complete' : 'erroring', packages: {} }]),
    );
    const asked: string[] = [];
    const api = {
      request: (_method: string, path: string) => {
        asked.push(path);
        if (path === '/v1/nodes/node-001') return Promise.reject(new Error('503 Temporal unavailable'));
        return Promise.resolve({ status: 200, body: { ...failing, node: path.split('/').pop()! } });
      },
    } as unknown as ApiClient;
    const s = { ...status('drivers', nodes) };
    const text = await explainErroring(api, s);
    expect(asked).toEqual([
      '/v1/nodes/node-000',
      '/v1/nodes/node-001',
      '/v1/nodes/node-002',
      '/v1/nodes/node-004',
      '/v1/nodes/node-005',
    ]);
    expect(text.split('\n')).toEqual([
      'why node-000 drivers/gpu (interrupt): DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
      'why node-001: its status could not be read (503 Temporal unavailable)',
      'why node-002 drivers/gpu (interrupt): DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
      'why node-004 drivers/gpu (interrupt): DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
      'why node-005 drivers/gpu (interrupt): DrainBlocked: pod default/bare has no controller (spec.drain.force lets it go)',
      '... and 1 more erroring (keelson node status NODE says why)',
      '',
    ]);
    expect(await explainErroring(api, status('drivers', { 'node-000': { status: 'complete', packages: {} } }))).toBe(
      '',
    );
  });

  test('with more than 20 nodes: counts per status, then the active and erroring nodes only, erroring first', () => {
    const nodes: StatusBody['nodes'] = {};
    for (let i = 0; i < 500; i++) {
      const name = `n${String(i).padStart(3, '0')}`;
      const st = i < 470 ? 'complete' : i < 475 ? 'waiting' : i < 498 ? 'in_progress' : 'erroring';
      nodes[name] = { status: st, packages: st === 'in_progress' ? { gpu: pkg('2.0', 'apply', 'in_progress') } : {} };
    }
    const lines = rolloutStatusText(status('drivers', nodes), false).split('\n');
    // Paused, every node says paused: those with a package erroring or running are still listed, erroring first.
    const paused = Object.fromEntries(
      Object.entries(nodes).map(([n, v]) => [
        n,
        { status: 'paused', packages: v.status === 'erroring' ? { gpu: pkg('2.0', 'apply', 'erroring') } : v.packages },
      ]),
    );
    const pausedLines = rolloutStatusText(status('drivers', paused), false).split('\n');
    expect(pausedLines[1]).toBe('500 nodes: paused 500');
    expect(pausedLines.slice(3, 5).map((l) => l.split(/ +/)[0])).toEqual(['n498', 'n499']);
    expect(pausedLines[23]).toBe('... and 5 more to look at (-o wide lists every node)');
    expect(lines[1]).toBe('500 nodes: complete 470, erroring 2, in_progress 23, waiting 5');
    expect(lines[2]).toMatch(/^NODE +STATUS +PACKAGES$/);
    expect(lines.slice(3, 5).map((l) => l.split(/ +/).slice(0, 2).join(' '))).toEqual([
      'n498 erroring',
      'n499 erroring',
    ]);
    expect(lines.slice(3, 23).every((l) => / (erroring|in_progress) /.test(l))).toBe(true);
    expect(lines[23]).toBe('... and 5 more to look at (-o wide lists every node)');
    expect(rolloutStatusText(status('drivers', nodes), true).split('\n')).toHaveLength(500 + 3);
  });
});

function status(name: string, nodes: StatusBody['nodes']): StatusBody {
  return { name, status: 'erroring', generation: 1, paused: false, disabled: false, completeNodes: '0/0', nodes };
}
