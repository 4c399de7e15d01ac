import type { Payload } from '@temporalio/common';
import type { RolloutSpec } from '../model';
import type { RolloutInput } from '../workflows/rollout/workflow';
import { updateSpecUpdate } from '../workflows/messages';
import type { KeelsonContext } from './connect';

// The spec a running rollout holds now: its run's input (continue-as-new carries the current spec there), then each
// updateSpec that completed without failure, in the order they completed, which is the order the workflow applied
// them. An accepted update still in flight, or one the workflow refused after accepting it (its image policy), is not
// the rollout's spec.

export async function specFromHistory(ctx: KeelsonContext, workflowId: string, runId: string): Promise<RolloutSpec> {
  const history = await ctx.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const converter = ctx.client.options.loadedDataConverter.payloadConverter;
  const decode = <T>(p: Payload | null | undefined): T | undefined => (p ? (converter.fromPayload(p) as T) : undefined);
  let spec: RolloutSpec | undefined;
  const accepted = new Map<string, RolloutSpec | undefined>();
  for (const event of history.events ?? []) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) spec = decode<RolloutInput>(started.input?.payloads?.[0])?.spec ?? spec;
    const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    if (request?.input?.name === updateSpecUpdate.name && request.meta?.updateId) {
      accepted.set(request.meta.updateId, decode<RolloutSpec>(request.input.args?.payloads?.[0]));
    }
    const completed = event.workflowExecutionUpdateCompletedEventAttributes;
    const id = completed?.meta?.updateId;
    if (id && accepted.has(id) && completed.outcome?.success) spec = accepted.get(id) ?? spec;
  }
  if (!spec) throw new Error(`${workflowId}: no spec in the history of run ${runId}`);
  return spec;
}
