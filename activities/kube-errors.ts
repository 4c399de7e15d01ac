import { ApiException } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../model/failure-types';

// Error classification for every Kubernetes call: what Temporal should retry and what it must not.
// - 5xx, 429, network errors: a plain (retryable) KubeError; the activity's retry policy retries it.
// - 403: non-retryable `KubeForbidden`, naming the verb and resource that RBAC refuses.
// - 422: non-retryable `KubeInvalid`, naming the invalid field(s).
// - other statuses (404, 409, 410, ...): a KubeError carrying the code, for callers that expect them.

interface StatusBody {
  message?: string;
  reason?: string;
  details?: { causes?: { field?: string; message?: string; reason?: string }[] };
}

export class KubeError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
    readonly status: StatusBody,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

export function statusBody(err: ApiException<unknown>): StatusBody {
  const body = err.body;
  if (typeof body === 'object' && body !== null) return body as StatusBody;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as StatusBody;
    } catch {
      return { message: body };
    }
  }
  return {};
}

/** The status code of a Kubernetes error (ApiException or KubeError), if it has one. */
export function kubeCode(err: unknown): number | undefined {
  if (err instanceof KubeError) return err.code;
  if (err instanceof ApiException) return err.code;
  return undefined;
}

export const isNotFound = (err: unknown) => kubeCode(err) === 404;
export const isConflict = (err: unknown) => kubeCode(err) === 409;

/** Turns a failed call into the error Temporal should see. */
export function classifyKubeError(err: unknown, verb: string, resource: string): Error {
  if (err instanceof ApplicationFailure || err instanceof KubeError) return err;
  if (!(err instanceof ApiException)) {
    const cause = err instanceof Error ? err.message : String(err);
    return new KubeError(`${verb} ${resource}: ${cause}`, undefined, {});
  }
  const status = statusBody(err);
  const message = status.message ?? err.message;
  if (err.code === 403) {
    return ApplicationFailure.create({
      type: FAILURE_TYPES.kubeForbidden,
      nonRetryable: true,
      message: `forbidden: Keelson may not ${verb} ${resource} (grant it in the worker's RBAC): ${message}`,
    });
  }
  if (err.code === 422) {
    const fields = (status.details?.causes ?? []).map((c) => c.field).filter((f): f is string => !!f);
    const named = fields.length > 0 ? `field ${[...new Set(fields)].join(', ')}` : 'a field';
    return ApplicationFailure.create({
      type: FAILURE_TYPES.kubeInvalid,
      nonRetryable: true,
      message: `invalid ${resource} (${verb}): ${named} rejected: ${message}`,
      details: [fields],
    });
  }
  return new KubeError(`${verb} ${resource}: HTTP ${err.code}: ${message}`, err.code, status);
}

/** Runs one Kubernetes call, classifying its failure. */
export async function kube<T>(verb: string, resource: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw classifyKubeError(err, verb, resource);
  }
}

/** The same, with 404 as undefined. */
export async function kubeOptional<T>(verb: string, resource: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw classifyKubeError(err, verb, resource);
  }
}
