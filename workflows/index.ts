// The workflow bundle's entry point: every workflow type the worker registers.
export { nodeWorkflow } from './node';
export { rolloutWorkflow } from './rollout';
