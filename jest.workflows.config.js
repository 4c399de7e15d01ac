// Workflow tests: each file runs a Temporal dev server of its own, so no shared stack (`npm run test:workflows`).
// `npm test` runs them too, with the rest.
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/workflows'],
  globalSetup: '<rootDir>/harness/workflow-setup.ts',
  globalTeardown: '<rootDir>/harness/workflow-teardown.ts',
};
