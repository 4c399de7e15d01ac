import type { V1Pod } from '@kubernetes/client-node';
import { sanitizeLogText } from '../model';
import type { Clients } from './clients';
import { classifyKubeError } from './kube-errors';

// G7: the tail of a failed pod's container log, through model's sanitizer, within the byte budget. When the log
// cannot be read (pod gone, kubelet unreachable) the tail says so, rather than failing the stage's report.

/** Lines fetched before the byte budget is applied: enough for any budget up to 64 KiB of typical lines. */
const TAIL_LINES = 2000;

export async function readLogTail(clients: Clients, pod: V1Pod, container: string, maxBytes: number): Promise<string> {
  const name = pod.metadata!.name!;
  const namespace = pod.metadata!.namespace!;
  try {
    const text = await clients.core.readNamespacedPodLog({ name, namespace, container, tailLines: TAIL_LINES });
    return sanitizeLogText(String(text), maxBytes);
  } catch (err) {
    const reason = classifyKubeError(err, 'read log of', `pod ${namespace}/${name} container ${container}`).message;
    return unavailable(reason, maxBytes);
  }
}

export function unavailable(reason: string, maxBytes: number): string {
  return sanitizeLogText(`logs unavailable: ${reason}`, maxBytes);
}
