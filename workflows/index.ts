// The workflow bundle's entry point: every workflow type the worker registers.
export { nodeWorkflow } from './node/workflow';
export { rolloutWorkflow } from './rollout/workflow';
