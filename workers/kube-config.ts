import { createHash } from 'node:crypto';
import https from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

// @kubernetes/client-node 1.4 makes a new https.Agent for every API call, so every call opened a new connection with
// a full TLS handshake (the client key parsed again, the certificate checked again), on this process and on the
// kube-apiserver alike: a sixth of the worker's CPU time at 100 nodes. This KubeConfig gives the API calls one
// keep-alive agent instead. Watches and log reads keep the library's own agents: each is one long request.
// A rotated certificate, key or CA changes the TLS settings: the calls then get a new agent, and the previous one is
// closed a minute later, when no call (30 s at most) can still be using it.

/** The TLS settings an agent connects with: calls that agree on them can share its connections. */
const TLS_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;
const RETIRED_AGENT_CLOSE_MS = 60_000;

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

export class KeepAliveKubeConfig extends KubeConfig {
  private current?: { key: string; agent: https.Agent };

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getAgent();
    const key = tlsSettingsKey(fresh);
    if (key === undefined) return;
    if (this.current?.key !== key) {
      const retired = this.current?.agent;
      if (retired) setTimeout(() => retired.destroy(), RETIRED_AGENT_CLOSE_MS).unref();
      this.current = { key, agent: new https.Agent({ ...(fresh as https.Agent).options, keepAlive: true }) };
    }
    context.setAgent(this.current.agent);
  }
}
