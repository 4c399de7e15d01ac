import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCOPED, startTestKeelson, type TestKeelson } from '../api/stack';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { skyhookYaml } from '../../harness/manifests';

// `keelson rollout ...` and `keelson node ...` as users run them: a real process talking to a real API, worker and
// Temporal server. The API runs in this process, so the CLI is run asynchronously (never spawnSync).

const root = join(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'keelson-cli-'));
let k: TestKeelson;
const name = `cli-r-${Date.now().toString(36)}`;
const NODE = 'node-004';
// Each test runs the CLI many times, and each run starts a Node process that transpiles the CLI: give them room.
jest.setTimeout(300_000);

beforeAll(async () => {
  k = await startTestKeelson('clit');
}, 120_000);

afterAll(async () => {
  await k?.stop();
});

function file(base: string, text: string): string {
  const p = join(dir, base);
  writeFileSync(p, text);
  return p;
}

function keelson(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'keelson.js'), ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, KEELSON_API_URL: k.url, KEELSON_API_TOKEN: k.token, ...env },
        timeout: 120_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

const v1 = () => file('v1.yaml', skyhookYaml(name, [NODE], { base: { version: '1.0.0' } }));
const v2 = () => file('v2.yaml', skyhookYaml(name, [NODE], { base: { version: '2.0.0' } }));

test('rollout start -f FILE --wait: plain progress lines, exit 0 when complete', async () => {
  const started = Date.now();
  const r = await keelson(['rollout', 'start', '-f', v1(), '--wait']);
  console.log(`keelson rollout start --wait, 1 node x 1 package: ${Date.now() - started} ms`);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines[0]).toBe(`rollout ${name} started: ${rolloutWorkflowId(k.cluster, name)}`);
  expect(lines[1]).toMatch(/^ {2}Temporal UI: http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\/keelson%2F/);
  expect(lines).toContain(`rollout ${name}: complete, 1/1 nodes complete, generation 1`);
  expect(lines).toContain(`  ${NODE}: complete base@1.0.0 config complete`);
  expect(r.stdout).not.toContain('\x1b[');
});

test('start again: same spec is a no-op (exit 0); a different spec is a conflict (exit 5) pointing at apply', async () => {
  const same = await keelson(['rollout', 'start', '-f', v1()]);
  expect(same.code).toBe(0);
  expect(same.stdout).toContain(`rollout ${name} already running with this spec`);
  const other = await keelson(['rollout', 'start', '-f', v2()]);
  expect(other.code).toBe(5);
  expect(other.stderr).toContain('keelson rollout apply');
});

test('rollout apply updates the spec; status --watch on a terminal draws a progress bar and a node table', async () => {
  const r = await keelson(['rollout', 'apply', '-f', v2()]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(`rollout ${name} updated (generation 2)`);
  const w = await keelson(['rollout', 'status', name, '--watch'], { KEELSON_PROGRESS: 'tty' });
  expect(w.code).toBe(0);
  expect(w.stdout).toContain(`[${'#'.repeat(30)}] 100% 1/1 nodes`);
  expect(w.stdout).toMatch(/NODE\s+STATUS\s+PACKAGES/);
  expect(w.stdout).toMatch(new RegExp(`${NODE}\\s+complete\\s+base@2\\.0\\.0 config complete`));
  const again = await keelson(['rollout', 'apply', '-f', v2()]);
  expect(again).toMatchObject({ code: 0 });
  expect(again.stdout).toContain(`rollout ${name} unchanged: ${rolloutWorkflowId(k.cluster, name)}`);
});

test('rollout status NAME --json: name, status, nodes with packages {version, stage, state, restarts}', async () => {
  const r = await keelson(['rollout', 'status', name, '--json']);
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({
    name,
    status: 'complete',
    nodes: {
      [NODE]: {
        status: 'complete',
        packages: { base: { version: '2.0.0', stage: 'config', state: 'complete', restarts: 0 } },
      },
    },
  });
  const plain = await keelson(['rollout', 'status', name]);
  expect(plain.stdout.split('\n').slice(0, 2)).toEqual([
    `rollout ${name}: complete, 1/1 nodes complete, generation 2`,
    // The test API's token has no name: its actor is "api".
    'started by api; last change: update by api, generation 2',
  ]);
});

test('rollout list (--json and table) and node status NODE --json', async () => {
  const list = await keelson(['rollout', 'list', '--json']);
  expect(list.code).toBe(0);
  expect((JSON.parse(list.stdout).rollouts as { name: string }[]).map((x) => x.name)).toContain(name);
  const table = await keelson(['rollout', 'list']);
  expect(table.stdout).toMatch(/^NAME\s+STATUS\s+PACKAGES\s+STARTED\n/);
  expect(table.stdout).toMatch(new RegExp(`\\n${name}\\s+\\S+\\s+base\\s`));
  const node = await keelson(['node', 'status', NODE, '--json']);
  expect(node.code).toBe(0);
  expect(JSON.parse(node.stdout)).toMatchObject({
    node: NODE,
    rollouts: { [name]: { status: 'complete', packages: { base: { version: '2.0.0', state: 'complete' } } } },
  });
});

test('pause and resume with --reason; rerun and reset on a node', async () => {
  expect((await keelson(['rollout', 'pause', name, '--reason', 'change freeze'])).code).toBe(0);
  const paused = JSON.parse((await keelson(['rollout', 'status', name, '--json'])).stdout);
  expect(paused.paused).toBe(true);
  const resumed = await keelson(['rollout', 'resume', name, '--reason', 'freeze over']);
  expect(resumed).toMatchObject({ code: 0, stdout: `rollout ${name}: resume sent (freeze over)\n` });
  const audit = (await keelson(['rollout', 'status', name])).stdout.split('\n')[1];
  expect(audit).toMatch(/^started by api; last change: resume by api for \S+@\S+ \(freeze over\), generation 2$/);
  const rerun = await keelson(['node', 'rerun', NODE, '--rollout', name, '--package', 'base', '--stage', 'config']);
  expect(rerun).toMatchObject({ code: 0, stdout: `node ${NODE}: base of ${name} runs again from config\n` });
  const reset = await keelson(['node', 'reset', NODE, '--rollout', name, '--yes']);
  expect(reset).toMatchObject({ code: 0, stdout: `node ${NODE}: rollout ${name} reset\n` });
  const w = await keelson(['rollout', 'status', name, '--watch']);
  expect(w.code).toBe(0);
  expect(w.stdout).toContain(`  ${NODE}: complete base@2.0.0 config complete`);
});

/** How many times the node workflow accepted a reset update: a refused command must not add one. */
async function resetsOn(node: string): Promise<number> {
  const { events } = await k.temporal.workflow.getHandle(nodeWorkflowId(k.cluster, node)).fetchHistory();
  return events!.filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'reset',
  ).length;
}

test('destructive commands without a terminal: refused without --yes (exit 2, naming --yes), nothing done', async () => {
  const refusal = (action: string) =>
    `keelson: refusing to ${action} without confirmation: stdin is not a terminal; pass --yes\n`;
  const resets = await resetsOn(NODE);
  const reset = await keelson(['node', 'reset', NODE, '--rollout', name]);
  expect(reset).toEqual({ code: 2, stdout: '', stderr: refusal(`reset rollout ${name} on node ${NODE}`) });
  const batches = await keelson(['rollout', 'reset-batches', name, '--reason', 'start over']);
  expect(batches).toEqual({ code: 2, stdout: '', stderr: refusal(`reset the batches of rollout ${name}`) });
  const dp = await keelson(['deployment-policy', 'reset', name, '--reason', 'start over']);
  expect(dp).toEqual({ code: 2, stdout: '', stderr: refusal(`reset the batches of rollout ${name}`) });
  const del = await keelson(['rollout', 'delete', name]);
  expect(del).toEqual({ code: 2, stdout: '', stderr: refusal(`delete rollout ${name}`) });
  // Nothing was sent: the rollout runs, its last change and its batches are as they were, the node was not reset.
  const status = JSON.parse((await keelson(['rollout', 'status', name, '--json'])).stdout);
  expect(status.lastChange.action).not.toBe('reset-batches');
  expect(status.compartmentStatuses.__default__.batchState.currentBatch).toBeGreaterThan(1);
  expect(await resetsOn(NODE)).toBe(resets);
});

test('rollout reset-batches --yes, and deployment-policy reset --confirm as Skyhook users type it', async () => {
  const r = await keelson(['rollout', 'reset-batches', name, '--reason', 'start over', '--yes']);
  expect(r).toEqual({
    code: 0,
    stdout: `rollout ${name}: batches reset (start over)\n  __default__: batch 1, 1 complete, 0 failed\n`,
    stderr: '',
  });
  const audit = (await keelson(['rollout', 'status', name])).stdout.split('\n')[1];
  expect(audit).toMatch(/^started by api; last change: reset-batches by api for \S+@\S+ \(start over\), generation 2$/);
  const dp = await keelson(['dp', 'reset', name, '--reason', 'again', '--confirm', '--json']);
  expect(dp.code).toBe(0);
  expect(JSON.parse(dp.stdout)).toMatchObject({
    action: 'reset-batches',
    reason: 'again',
    compartments: { __default__: { currentBatch: 1, shouldStop: false } },
  });
});

test('node rerun and reset on several nodes: names, patterns, --all-erroring; each outcome reported, exit non-zero if any failed', async () => {
  const multi = `${name}-multi`;
  const nodes = ['node-004', 'node-005'];
  const failing = file('multi.yaml', skyhookYaml(multi, nodes, { broken: { version: '1.0.0', failStages: 'apply' } }));
  expect((await keelson(['rollout', 'start', '--wait', '--timeout', '100', '-f', failing])).code).toBe(1);

  const rerun = await keelson(['node', 'rerun', '--all-erroring', '--rollout', multi, '--package', 'broken']);
  expect(rerun).toEqual({
    code: 0,
    stdout: nodes.map((n) => `node ${n}: broken of ${multi} runs again\n`).join(''),
    stderr: '',
  });
  const byPattern = await keelson(['node', 'reset', 'node-00*', '--rollout', multi, '--yes']);
  expect(byPattern).toEqual({
    code: 0,
    stdout: nodes.map((n) => `node ${n}: rollout ${multi} reset\n`).join(''),
    stderr: '',
  });

  const partly = await keelson(['node', 'reset', 'node-004', 'no-such-node', '--rollout', multi, '--yes']);
  expect(partly.code).toBe(4);
  expect(partly.stdout).toBe(`node node-004: rollout ${multi} reset\n`);
  expect(partly.stderr).toMatch(
    /^node no-such-node: failed: .*no-such-node.*not found.*\nkeelson: 1 of 2 nodes failed\n$/,
  );

  const json = await keelson(['node', 'rerun', ...nodes, '--rollout', multi, '--package', 'nope', '--json']);
  expect(json.code).toBe(4);
  expect(JSON.parse(json.stdout)).toEqual(
    nodes.map((node) => ({ node, ok: false, status: 404, error: 'not_found', message: expect.any(String) })),
  );

  const nothing = await keelson(['node', 'reset', 'gpu-*', '--rollout', multi, '--yes']);
  expect(nothing).toEqual({
    code: 1,
    stdout: '',
    stderr: `nodes: pattern "gpu-*" matches no node of rollout ${multi}; its nodes: node-004, node-005\n`,
  });
  const none = await keelson(['node', 'reset', '--rollout', multi, '--yes']);
  expect(none).toMatchObject({ code: 2, stdout: '' });
  expect(none.stderr).toContain('--all-erroring');
  expect((await keelson(['rollout', 'delete', multi, '--yes'])).code).toBe(0);
});

test('errors: stderr and the documented exit codes', async () => {
  const notFound = await keelson(['rollout', 'status', 'no-such-rollout']);
  expect(notFound).toMatchObject({ code: 4, stdout: '' });
  expect(notFound.stderr).toContain('rollout no-such-rollout not found');
  expect((await keelson(['node', 'rerun', NODE, '--rollout', name, '--package', 'nope'])).code).toBe(4);
  const noToken = await keelson(['rollout', 'list'], { KEELSON_API_TOKEN: '' });
  expect(noToken.code).toBe(6);
  expect(noToken.stderr).toContain('KEELSON_API_TOKEN');
  const reader = await keelson(['rollout', 'start', '-f', v1()], { KEELSON_API_TOKEN: SCOPED.reader.token });
  expect(reader).toMatchObject({
    code: 6,
    stderr: 'keelson: token reader (scopes read) may not call POST /v1/rollouts: it needs scope deploy\n',
  });
  const bad = await keelson([
    'rollout',
    'start',
    '-f',
    file('bad.yaml', skyhookYaml('bad', [NODE], { base: { version: 'x y' } })),
  ]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/^Skyhook\/bad\.spec\.packages\.base\.version: /);
  const missing = await keelson(['rollout', 'start', '-f', join(dir, 'nope.yaml')]);
  expect(missing).toMatchObject({ code: 1, stderr: `${join(dir, 'nope.yaml')}: no such file\n` });
  const down = await keelson(['rollout', 'list'], { KEELSON_API_URL: 'http://127.0.0.1:7489' });
  expect(down.code).toBe(3);
  expect(down.stderr).toContain('cannot reach the Keelson API at http://127.0.0.1:7489');
  const usage = await keelson(['rollout', 'pause', name]);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toContain("required option '--reason <text>' not specified");
});

test('status --watch rides out an API outage: says so on stderr, exits 0 once the API answers again', async () => {
  // A real outage: the CLI talks to a port where nothing listens yet; a plain TCP relay to the API opens there later.
  const api = new URL(k.url);
  const relay = createServer((socket) => {
    const upstream = connect(Number(api.port), api.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  const port = await new Promise<number>((resolve) =>
    relay.listen(0, '127.0.0.1', () => {
      const p = (relay.address() as AddressInfo).port;
      relay.close(() => resolve(p));
    }),
  );
  const child = spawn(process.execPath, [join(root, 'bin', 'keelson.js'), 'rollout', 'status', name, '--watch'], {
    cwd: root,
    env: { PATH: process.env.PATH, KEELSON_API_URL: `http://127.0.0.1:${port}`, KEELSON_API_TOKEN: k.token },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 240 && !stderr.includes('still waiting'); i++) await new Promise((r) => setTimeout(r, 250));
  expect(stderr).toContain(`keelson: cannot reach the Keelson API at http://127.0.0.1:${port}`);
  relay.listen(port, '127.0.0.1');
  const code = await exited;
  relay.close();
  expect(stderr).toContain('keelson: reachable again');
  expect(code).toBe(0);
  expect(stdout).toContain(`rollout ${name}: complete`);
});

test('rollout delete: exit 0, then the rollout is not found (exit 4)', async () => {
  const r = await keelson(['rollout', 'delete', name, '--yes']);
  expect(r).toMatchObject({ code: 0, stdout: `rollout ${name}: delete requested\n` });
  let code = 0;
  for (let i = 0; i < 40 && code !== 4; i++) {
    code = (await keelson(['rollout', 'status', name])).code;
    if (code !== 4) await new Promise((res) => setTimeout(res, 250));
  }
  expect(code).toBe(4);
});

test('start --wait on a package whose apply fails: exit 1 once the node is erroring', async () => {
  const failing = `${name}-fail`;
  const started = Date.now();
  const r = await keelson([
    'rollout',
    'start',
    '--wait',
    '--timeout',
    '100',
    '-f',
    file('fail.yaml', skyhookYaml(failing, ['node-005'], { broken: { version: '1.0.0', failStages: 'apply' } })),
  ]);
  console.log(`start --wait on a failing package ended in ${Date.now() - started} ms`);
  expect(r.stderr).toContain(`keelson: rollout ${failing} is erroring on 1 node(s)`);
  expect(r.code).toBe(1);
  expect(r.stdout).toContain('node-005: erroring broken@1.0.0 apply erroring');
  // Why, read from the node: at the end of --wait, in rollout status and in node status.
  // The reason, then the last line of the stage's log tail (the simulator's own words for the failure).
  const why = (prefix: string) =>
    new RegExp(`^why ${prefix}${failing}/broken \\(apply\\): \\w+: .*apply failed: exit code 1.*$`, 'm');
  expect(r.stdout).toMatch(why('node-005 '));
  expect((await keelson(['rollout', 'status', failing])).stdout).toMatch(why('node-005 '));
  expect((await keelson(['node', 'status', 'node-005'])).stdout).toMatch(why(''));
});

test('logs of the failed stage: the log on stdout, its pod and container on stderr; --tail; a gone Job exits 4', async () => {
  const failing = `${name}-fail`;
  const stageLog = ['logs', '--rollout', failing, '--node', 'node-005', '--package', 'broken'];
  const r = await keelson(stageLog);
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(
    /^pod \S+, container broken-apply \(containers: broken-init, broken-apply, broken-applycheck\)\n$/,
  );
  expect(r.stdout).toContain('[keelson-sim] apply started on node-005');
  expect(r.stdout).toContain('[keelson-sim] apply failed: exit code 1');
  const tail = await keelson([...stageLog, '--tail', '1']);
  expect(tail.stdout).toMatch(/^\[keelson-sim\] apply failed: exit code 1 .*\n$/);
  const followed = await keelson([...stageLog, '-f']);
  expect([followed.code, followed.stdout]).toEqual([0, r.stdout]);
  const gone = await keelson([...stageLog, '--stage', 'config']);
  expect(gone.code).toBe(4);
  expect(gone.stdout).toBe('');
  expect(gone.stderr).toContain('its Job is gone');
  expect(gone.stderr).toContain('`keelson node status node-005`');
  const reader = await keelson(['node', 'ignore', 'node-000'], { KEELSON_API_TOKEN: SCOPED.reader.token });
  expect(reader.code).toBe(6);
  expect(reader.stderr).toContain('it needs scope operate');
});

test('node ignore and unignore: one line a node, idempotent, exit 4 naming a node that does not exist', async () => {
  try {
    const first = await keelson(['node', 'ignore', 'node-000', 'no-such-node']);
    expect(first).toEqual({
      code: 4,
      stdout: 'node node-000: ignored\n',
      stderr: 'node no-such-node: not found: node no-such-node does not exist\n',
    });
    expect(await keelson(['node', 'ignore', 'node-000'])).toEqual({
      code: 0,
      stdout: 'node node-000: already ignored\n',
      stderr: '',
    });
    const json = await keelson(['node', 'ignore', 'node-000', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      action: 'ignore',
      results: [{ node: 'node-000', outcome: 'already ignored' }],
    });
    expect(await keelson(['node', 'unignore', '--selector', 'kubernetes.io/hostname=node-000'])).toEqual({
      code: 0,
      stdout: 'node node-000: unignored\n',
      stderr: '',
    });
    const none = await keelson(['node', 'ignore']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('body.nodes: name at least one node, or a selector\n');
  } finally {
    await keelson(['node', 'unignore', 'node-000']);
  }
});
