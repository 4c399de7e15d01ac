#!/usr/bin/env node
// Runs the TypeScript CLI straight from the checkout: no build step between a change and `npx keelson`.
require('tsx/cjs');
require('../cli/main.ts');
