// Start-to-close timeout of the activities that make one or a few Kubernetes or Temporal calls. Such a call takes well
// under a second even on a saturated machine; when the worker running it is killed, the next attempt starts only
// after this timeout, so it is kept short (it was two minutes: a killed worker stalled a batch that long).
export const SHORT_CALL_TIMEOUT = '30 seconds';
