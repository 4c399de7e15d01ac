import { z } from 'zod';

// The modules every workflow of a worker shares (the bundle's `preloadModules`, workers/workflow-bundle.ts). A
// reusable V8 context evaluates the bundle's modules again for each workflow it caches; zod alone, which the model's
// schemas are built with, was about 0.75 MiB of each (bench/README.md, "Side by side at 463cb47, then worker memory"). Shared, it is evaluated
// once. The SDK freezes what is shared once it is loaded, so what zod sets up at its first schema and first parse
// (its global config: error messages, memoizer) is set up here, before that; the schemas the workflows build
// from it are their own and not frozen.
z.object({ warm: z.string() }).safeParse({ warm: 'up' });

export * from 'zod';
