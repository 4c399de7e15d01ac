import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ApiextensionsV1Api, type KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { kubeconfigPath, projectRoot } from '../../deploy/dev/paths';
import { freePort, sleep } from './fleet';
import { processRssKb } from './machine';

// NVIDIA Skyhook's operator, built by deploy/dev/install-skyhook.sh (cached), run out of cluster as a child process
// against the local kube-apiserver with webhooks off, as the side-by-side's counterpart of the Keelson worker.

const installScript = path.join(projectRoot, 'deploy', 'dev', 'install-skyhook.sh');

/** Builds the operator when it is not cached yet; returns its directory (bin/manager, src/config/crd/bases). */
export function installSkyhook(log: (line: string) => void): string {
  const out = execFileSync(installScript, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  for (const line of out.trim().split('\n')) log(line);
  return execFileSync(installScript, ['--print-dir'], { encoding: 'utf8' }).trim();
}

/** Applies Skyhook's own CRDs (from the built source, never from this repository), then waits until established. */
export async function applySkyhookCrds(kc: KubeConfig, dir: string): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const bases = path.join(dir, 'src', 'config', 'crd', 'bases');
  for (const file of fs.readdirSync(bases).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(fs.readFileSync(path.join(bases, file), 'utf8'))) {
      const crd = doc.toJS() as V1CustomResourceDefinition | null;
      if (!crd?.metadata?.name) continue;
      const name = crd.metadata.name;
      try {
        const existing = await api.readCustomResourceDefinition({ name });
        crd.metadata.resourceVersion = existing.metadata?.resourceVersion;
        await api.replaceCustomResourceDefinition({ name, body: crd });
      } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
        await api.createCustomResourceDefinition({ body: crd });
      }
      for (let i = 0; ; i++) {
        const got = await api.readCustomResourceDefinition({ name });
        if ((got.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True')) break;
        if (i > 120) throw new Error(`CRD ${name} not Established after 60s`);
        await sleep(500);
      }
    }
  }
}

/** One operator process: its Kubernetes client's request counts (rest_client_requests_total) and its RSS. */
export class SkyhookOperator {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private metricsPort = 0;
  private peakRssKb = 0;
  private rssTimer?: NodeJS.Timeout;

  constructor(
    private readonly dir: string,
    readonly namespace: string,
    readonly logFile: string,
  ) {}

  async start(): Promise<void> {
    this.metricsPort = await freePort();
    const probePort = await freePort();
    const log = fs.createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(path.join(this.dir, 'bin', 'manager'), [], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        KUBECONFIG: kubeconfigPath,
        ENABLE_WEBHOOKS: 'false',
        NAMESPACE: this.namespace,
        METRICS_PORT: `127.0.0.1:${this.metricsPort}`,
        PROBE_PORT: `127.0.0.1:${probePort}`,
        LEADER_ELECTION: 'false',
        LOG_LEVEL: 'info',
        LOG_ENCODER: 'console',
        AGENT_IMAGE: 'registry.example/skyhook/agent:6.4.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.rssTimer = setInterval(() => {
      this.peakRssKb = Math.max(this.peakRssKb, this.rssKb());
    }, 500);
    this.rssTimer.unref();
    // Ready once its probe answers; its informers have synced by the time the bench's clock starts (see caller).
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`skyhook operator exited (${child.exitCode}); see ${this.logFile}`);
      if ((await httpGet(`http://127.0.0.1:${probePort}/readyz`).catch(() => '')) === 'ok') return;
      if (i > 240) throw new Error(`skyhook operator not ready after 120s; see ${this.logFile}`);
      await sleep(500);
    }
  }

  /** The operator's process id while it runs (its CPU time is read from /proc). */
  get pid(): number | undefined {
    const c = this.child;
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  rssKb(): number {
    return this.child?.exitCode === null ? processRssKb(this.child.pid) : 0;
  }

  get peakRssMiB(): number {
    return Math.round(Math.max(this.peakRssKb, this.rssKb()) / 1024);
  }

  /** The operator's own API requests since it started, by HTTP method (client-go's rest_client_requests_total). */
  async requests(): Promise<Record<string, number>> {
    const text = await httpGet(`http://127.0.0.1:${this.metricsPort}/metrics`);
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      if (!line.startsWith('rest_client_requests_total{')) continue;
      const method = /method="([^"]*)"/.exec(line)?.[1] ?? '-';
      out[method] = (out[method] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return out;
  }

  async stop(): Promise<void> {
    if (this.rssTimer) clearInterval(this.rssTimer);
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill('SIGTERM');
    await Promise.race([this.exited, sleep(10_000)]);
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${url} timed out`)));
  });
}
