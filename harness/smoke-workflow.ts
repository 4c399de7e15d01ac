import { proxyActivities } from '@temporalio/workflow';
import type { SmokeActivities } from './smoke-activities';

const { runJobToEnd } = proxyActivities<SmokeActivities>({ startToCloseTimeout: '2 minutes' });

/** The local-stack smoke workflow: one activity that runs a Job on a fake node to its end. */
export async function smokeJobWorkflow(namespace: string, node: string, failStage?: string): Promise<string> {
  return runJobToEnd(namespace, node, failStage);
}
