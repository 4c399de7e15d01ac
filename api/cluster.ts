import { ApiException, CoreV1Api, KubeConfig, Log } from '@kubernetes/client-node';
import { ignoreLabelKeys } from '../model';
import { InvalidError, NotFoundError, UnavailableError, type KeelsonError } from '../client';
import type { ApiSettings } from './settings';
import { KeepAliveKubeConfig } from '../workers/kube-config';

// The API's Kubernetes access, for the two routes that are not workflow calls: `node ignore|unignore` (a label on
// the Node) and `logs` (a stage Job pod's log). Its ServiceAccount may patch Nodes and read pods and their logs in
// the Jobs namespace, nothing more (docs/install.md, "What the chart creates").

export interface ClusterAccess {
  kc: KubeConfig;
  core: CoreV1Api;
  log: Log;
  /** Where stage Jobs run (the worker's KEELSON_NAMESPACE). */
  jobsNamespace: string;
  /** The labels `node ignore` sets (model/node-state.ts, ignoreLabelKeys). */
  ignoreLabels: string[];
}

export function clusterAccess(kc: KubeConfig, jobsNamespace: string, keyPrefix?: string): ClusterAccess {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    log: new Log(kc),
    jobsNamespace,
    ignoreLabels: ignoreLabelKeys(keyPrefix),
  };
}

/** KUBECONFIG when set, else the pod's ServiceAccount (in a cluster) or ~/.kube/config. */
export function clusterAccessFrom(settings: ApiSettings): ClusterAccess {
  const kc = new KeepAliveKubeConfig();
  if (settings.KUBECONFIG) kc.loadFromFile(settings.KUBECONFIG);
  else kc.loadFromDefault();
  return clusterAccess(kc, settings.KEELSON_NAMESPACE, settings.KEELSON_KEY_PREFIX);
}

/** The message of a Kubernetes error: the Status body's when there is one. */
export function kubeMessage(err: unknown): string {
  if (!(err instanceof ApiException)) return err instanceof Error ? err.message : String(err);
  const body: unknown = err.body;
  if (typeof body === 'object' && body !== null && 'message' in body) return String(body.message);
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (parsed.message !== undefined) return String(parsed.message);
    } catch {
      return body || `HTTP ${err.code}`;
    }
  }
  return `HTTP ${err.code}`;
}

export const kubeCode = (err: unknown) => (err instanceof ApiException ? err.code : undefined);

/**
 * A failed Kubernetes call as the API answers it: 404 not found; 400 invalid, on the field `path`; anything else
 * (RBAC's 403, 5xx, no answer) unavailable, naming the call.
 */
export function kubeFailure(err: unknown, call: string, path: string): KeelsonError {
  const code = kubeCode(err);
  const message = kubeMessage(err);
  if (code === 404) return new NotFoundError(`${call}: ${message}`);
  if (code === 400 || code === 422) return new InvalidError([{ path, message }]);
  return new UnavailableError(`Kubernetes refused or did not answer ${call}: ${message}`);
}
