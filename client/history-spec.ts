import type { Payload } from '@temporalio/common';
import type { RolloutSpec } from '../model';
import type { RolloutInput } from '../workflows/rollout/workflow';
import { updateSpecUpdate } from '../workflows/messages';
import type { KeelsonContext } from './connect';

// The spec a running rollout holds now: its run's input (continue-as-new carries the current spec there), then the
// last updateSpec the workflow accepted (the update's validator rejects a bad spec before it is accepted).

export async function specFromHistory(ctx: KeelsonContext, workflowId: string, runId: string): Promise<RolloutSpec> {
  const history = await ctx.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const converter = ctx.client.options.loadedDataConverter.payloadConverter;
  const decode = <T>(p: Payload | null | undefined): T | undefined => (p ? (converter.fromPayload(p) as T) : undefined);
  let spec: RolloutSpec | undefined;
  for (const event of history.events ?? []) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) spec = decode<RolloutInput>(started.input?.payloads?.[0])?.spec ?? spec;
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    if (accepted?.name === updateSpecUpdate.name) spec = decode<RolloutSpec>(accepted.args?.payloads?.[0]) ?? spec;
  }
  if (!spec) throw new Error(`${workflowId}: no spec in the history of run ${runId}`);
  return spec;
}
