// Unit tests of pure logic: no local stack to bring up (`npm run test:unit`). `npm test` runs them too, with the rest.
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/unit'],
  globalSetup: undefined,
  globalTeardown: undefined,
};
