// @kubernetes/client-node 1.x and some of its dependencies ship only ES modules; swc turns them into CommonJS.
const esmPackages = ['@kubernetes/client-node', 'openid-client', 'oauth4webapi', 'jose'];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest', { jsc: { target: 'es2022' } }],
  },
  transformIgnorePatterns: [`node_modules/(?!(${esmPackages.join('|')})/)`],
  globalSetup: '<rootDir>/harness/global-setup.ts',
  globalTeardown: '<rootDir>/harness/global-teardown.ts',
  testTimeout: 120000,
  // Temporal's native connections and kube watches can outlive a suite by a few seconds; CI must not wait on them.
  forceExit: true,
};
