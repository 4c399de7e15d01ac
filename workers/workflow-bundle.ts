// Where the workflow bundle comes from and what its workflows share, for every place that builds one
// (scripts/bundle-workflows.ts for the image, the bench and the tests; the worker when it has no prebuilt bundle).

export const workflowsPath = require.resolve('../workflows');

/** Evaluated once per worker, not once per cached workflow (workflows/shared-modules.ts). */
export const preloadModules = [require.resolve('../workflows/shared-modules')];
