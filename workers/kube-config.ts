import { createHash } from 'node:crypto';
import https from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

// @kubernetes/client-node 1.4 makes a new https.Agent for every API call, so every call opened a new connection with
// a full TLS handshake (the client key parsed again, the certificate checked again), on this process and on the
// kube-apiserver alike: a sixth of the worker's CPU time at 100 nodes. This KubeConfig gives the API calls (log reads
// included) one keep-alive agent instead; watches and followed logs, each one long request, keep the library's own.

/** The TLS settings an agent connects with: calls that agree on them can share its connections. */
const TLS_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

export interface KeepAliveTimes {
  /**
   * A call that has no answer after this long is aborted: a pooled connection to a server that died silently would
   * otherwise hold the next call that picks it up until TCP gives up, some 15 minutes. The kube-apiserver ends every
   * other call within 60 s itself; a log read, which it lets run, has no limit here.
   */
  callTimeoutMs: number;
  /** An idle connection is closed before a server or a load balancer in between would (60 s is a common timeout). */
  idleConnectionMs: number;
  /**
   * A rotated certificate, key or CA changes the TLS settings, so calls get a new agent; the previous one is closed
   * once no call can still be using it, one call timeout later (a log read still running then is cut off).
   */
  retiredAgentCloseMs: number;
}

const DEFAULT_TIMES: KeepAliveTimes = { callTimeoutMs: 60_000, idleConnectionMs: 30_000, retiredAgentCloseMs: 65_000 };

/** A digest of an agent's TLS settings, or undefined for an agent that is not a plain https.Agent (a proxy's). */
export function tlsSettingsKey(agent: unknown): string | undefined {
  if (!(agent instanceof https.Agent) || agent.constructor !== https.Agent) return undefined;
  const options = agent.options;
  const hash = createHash('sha256');
  for (const name of TLS_OPTIONS) {
    const value: unknown = options[name];
    hash.update(`${name}:`);
    for (const part of [value ?? ''].flat()) hash.update(Buffer.isBuffer(part) ? part : String(part)).update('\0');
  }
  return hash.digest('hex');
}

/** A pod's log (`.../pods/<name>/log`): a read the kube-apiserver lets run as long as the log takes. */
function isLogRead(url: string): boolean {
  return /\/pods\/[^/]+\/log(\?|$)/.test(url);
}

export class KeepAliveKubeConfig extends KubeConfig {
  private current?: { key: string; agent: https.Agent };

  constructor(private readonly times: KeepAliveTimes = DEFAULT_TIMES) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    if (!context.getSignal() && !isLogRead(context.getUrl()))
      context.setSignal(AbortSignal.timeout(this.times.callTimeoutMs));
    const fresh = context.getAgent();
    const key = tlsSettingsKey(fresh);
    if (key === undefined) return;
    if (this.current?.key !== key) {
      const retired = this.current?.agent;
      if (retired) setTimeout(() => retired.destroy(), this.times.retiredAgentCloseMs).unref();
      const options = { ...(fresh as https.Agent).options, keepAlive: true, timeout: this.times.idleConnectionMs };
      this.current = { key, agent: new https.Agent(options) };
    }
    context.setAgent(this.current.agent);
  }
}
