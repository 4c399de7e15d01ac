import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from '../../deploy/dev/paths';
import { eventually } from '../integration/worker-stack';
import { chart } from './chart-env';

// The Keelson image without a container engine: the Dockerfile's shape (multi-stage, npm ci, build, production
// dependencies, non-root user) checked against the chart, and its build step (`npm run build`, i.e. tsc) run into a
// scratch directory whose entry points then start with node alone: the worker and API refuse a bad setting with the
// documented message, and the compiled worker bundles its workflows, serves /healthz and drains on SIGTERM.

jest.setTimeout(600_000);

const dockerfile = fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
const values = YAML.parse(fs.readFileSync(path.join(chart, 'values.yaml'), 'utf8')) as {
  image: { repository: string; tag: string };
  worker: { command: string[] };
  api: { command: string[] };
  customResources: { controller: { command: string[] } };
  podSecurityContext: { runAsUser: number };
};
const instructions = dockerfile
  .split('\n')
  .filter((l) => l.trim() !== '' && !l.startsWith('#'))
  .map((l) => l.trim());
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-image-'));
// Where `npm run bundle -- dist/workflow-bundle.js` puts it in the image (its KEELSON_WORKFLOW_BUNDLE).
const bundle = path.join(scratch, 'dist', 'workflow-bundle.js');

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function run(cmd: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, cmd, { cwd: scratch, env: { PATH: process.env.PATH!, ...env } });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

test("the Dockerfile is multi-stage (npm ci, build, production dependencies) and runs as the chart's non-root user", () => {
  expect(instructions.filter((l) => l.startsWith('FROM '))).toEqual([
    'FROM ${NODE_IMAGE} AS build',
    'FROM ${NODE_IMAGE}',
  ]);
  // A supported Node LTS line (even major, 22 or later); a release passes the same name pinned by digest.
  const base = /^ARG NODE_IMAGE=node:(\d+)-bookworm-slim$/.exec(instructions[0]!);
  expect(base && Number(base[1]) >= 22 && Number(base[1]) % 2 === 0).toBe(true);
  expect(instructions).toContain('RUN npm ci');
  expect(instructions).toContain(
    'RUN npm run build && npm run bundle -- dist/workflow-bundle.js && npm prune --omit=dev',
  );
  const runtime = instructions.slice(
    instructions.lastIndexOf(instructions.filter((l) => l.startsWith('FROM ')).at(-1)!),
  );
  expect(runtime.filter((l) => l.startsWith('COPY')).every((l) => l.startsWith('COPY --from=build'))).toBe(true);
  expect(runtime).toContain(`USER ${values.podSecurityContext.runAsUser}:${values.podSecurityContext.runAsUser}`);
  expect(runtime.at(-1)).toBe(`CMD ${JSON.stringify(values.worker.command).replace(/,/g, ', ')}`);
  const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
    version: string;
    scripts: { build: string };
  };
  expect(pkg.scripts.build).toBe('tsc -p tsconfig.json');
  // The chart's default image is this build, tagged with the package version, and docs/install.md says how.
  const image = `${values.image.repository}:${values.image.tag}`;
  expect(values.image.tag).toBe(pkg.version);
  expect(dockerfile).toContain(`docker build -t ${image} .`);
  const install = fs.readFileSync(path.join(projectRoot, 'docs', 'install.md'), 'utf8');
  expect(install).toContain(`docker build -t ${image} .`);
  expect(install).toContain(`docker push ${image}`);
});

describe("the image's build step and entry points, with node alone", () => {
  beforeAll(() => {
    // `npm run build` into the scratch directory (the checkout's dist/ is left alone), node_modules beside it.
    execFileSync(
      path.join(projectRoot, 'node_modules', '.bin', 'tsc'),
      ['-p', 'tsconfig.json', '--outDir', path.join(scratch, 'dist')],
      { cwd: projectRoot, stdio: 'pipe' },
    );
    execFileSync(
      process.execPath,
      ['--import', 'tsx', path.join(projectRoot, 'scripts', 'bundle-workflows.ts'), bundle],
      { cwd: projectRoot, stdio: 'pipe' },
    );
    fs.symlinkSync(path.join(projectRoot, 'node_modules'), path.join(scratch, 'node_modules'));
    fs.copyFileSync(path.join(projectRoot, 'package.json'), path.join(scratch, 'package.json'));
  }, 600_000);

  test("the chart's worker, API and controller commands exist in the build and refuse a bad setting by name", async () => {
    const controllerCommand = values.customResources.controller.command;
    for (const command of [values.worker.command, values.api.command, controllerCommand]) {
      expect(command[0]).toBe('node');
      expect(fs.existsSync(path.join(scratch, command[1]!))).toBe(true);
    }
    const worker = await run([values.worker.command[1]!], { KEELSON_BACKOFF_LIMIT: '99' });
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain('KEELSON_BACKOFF_LIMIT="99": must be a whole number from 0 to 20');
    const api = await run([values.api.command[1]!], { KEELSON_API_PORT: 'x' });
    expect(api.code).not.toBe(0);
    expect(api.stderr).toContain('KEELSON_API_PORT="x"');
    const controller = await run([controllerCommand[1]!], { KEELSON_CONTROLLER_RESYNC_SECONDS: '0' });
    expect(controller.code).toBe(1);
    expect(controller.stderr).toContain('KEELSON_CONTROLLER_RESYNC_SECONDS="0": must be a whole number from 1 to 3600');
  });

  test("the compiled CLI runs with node alone: keelson --version is the image's package.json version", async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['dist/cli/main.js', '--version'],
        {
          cwd: scratch,
          env: {
            PATH: process.env.PATH!,
            KEELSON_API_URL: 'http://127.0.0.1:7489',
            KEELSON_CONFIG: path.join(scratch, 'none.yaml'),
          },
        },
        (err, out) => (err ? reject(err) : resolve(out)),
      ),
    );
    expect(stdout).toBe(
      `client: ${version}\nserver: unknown (cannot reach the Keelson API at http://127.0.0.1:7489 (ECONNREFUSED))\n`,
    );
  });

  test('the compiled worker loads the prebuilt workflow bundle, answers /healthz and drains on SIGTERM', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const child = spawn(process.execPath, [values.worker.command[1]!], {
      cwd: scratch,
      env: {
        PATH: process.env.PATH!,
        TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!,
        KUBECONFIG: process.env.KUBECONFIG!,
        KEELSON_CLUSTER: `image-${Date.now().toString(36)}`,
        KEELSON_TASK_QUEUE: `keelson-image-${Date.now().toString(36)}`,
        KEELSON_NAMESPACE: 'default',
        KEELSON_METRICS_ADDRESS: `127.0.0.1:${port}`,
        KEELSON_SDK_METRICS_ADDRESS: 'off',
        KEELSON_SHUTDOWN_GRACE_SECONDS: '0',
        KEELSON_WORKFLOW_BUNDLE: bundle,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await eventually(
        'the compiled worker ready',
        async () => {
          if (child.exitCode !== null) throw new Error(`worker exited ${child.exitCode}: ${stderr}`);
          const res = await fetch(`http://127.0.0.1:${port}/healthz`);
          expect(res.status).toBe(200);
          expect(stderr).toContain('keelson worker: task queue');
        },
        300_000,
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toContain('keelson worker: drained and stopped');
    // The prebuilt bundle was used: no webpack build at start.
    expect(`${stdout}${stderr}`).not.toContain('Workflow bundle created');
  });
});
