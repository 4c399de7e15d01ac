import { explainErroring } from './why';
import type { Command } from 'commander';
import type { ApiClient } from '../../client/http-client';
import {
  collectFiles,
  FILE_FLAGS,
  FILE_HELP,
  loadManifests,
  printFindings,
  requestDocuments,
  type Manifests,
} from './manifests';
import { confirm, NOT_CONFIRMED_EXIT } from './confirm';
import { EXIT, formatOf, outputOption, printJson, run, structured, type OutputFormat } from './output';
import { follow, type StatusBody } from './progress';
import { defineResetBatches } from './reset-batches';
import { rolloutListText, rolloutStatusText, type RolloutListEntry } from './views';
import { actor } from './who';

// `keelson rollout ...`: start, apply, status, list, pause/resume/disable/enable, reset-batches, delete, all through
// the HTTP API (`api` says which, from flags, environment or context), so auth and validation live in one place.

interface Ref {
  name: string;
  workflowId: string;
  runId: string;
  links: { rollout: string; nodes: string };
}

const seconds = (flag: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 604_800)
    throw new Error(`${flag}: "${value}" is not allowed; use seconds from 1 to 604800`);
  return n;
};

/** Terminal drawing unless stdout is not a terminal; KEELSON_PROGRESS=tty|plain overrides. */
export function ttyProgress(): boolean {
  const mode = process.env.KEELSON_PROGRESS;
  return mode === 'tty' ? true : mode === 'plain' ? false : process.stdout.isTTY === true;
}

/**
 * The rollouts of the `-f` manifests, or undefined once every error has been printed. Validated here, with the model
 * code the API runs, so that nothing is applied while any document is bad; the API validates each request again.
 * Warnings are `keelson validate`'s to print.
 */
async function validManifests(files: readonly string[]): Promise<Manifests | undefined> {
  const manifests = await loadManifests(files);
  if (manifests.errors.length === 0) return manifests;
  printFindings({ errors: manifests.errors, warnings: [] });
  return undefined;
}

type Applied = Ref & { action: string; generation?: number };

/** Starts the rollout, or updates the running one of that name when its spec differs (the API's 409). */
async function applyOne(client: ApiClient, name: string, documents: unknown[]): Promise<Applied> {
  try {
    const { body } = await client.request<Ref & { created: boolean }>('POST', '/v1/rollouts', { json: documents });
    return { ...body, action: body.created ? 'created' : 'unchanged' };
  } catch (err) {
    if ((err as { status?: number }).status !== 409) throw err;
  }
  const { body } = await client.request<Ref & { changed: boolean; generation: number }>(
    'PUT',
    `/v1/rollouts/${encodeURIComponent(name)}`,
    { json: documents },
  );
  return { ...body, action: body.changed ? 'updated' : 'unchanged' };
}

interface FollowFlags {
  timeout: number;
  interval: number;
}

const followOpts = (o: FollowFlags) => ({
  tty: ttyProgress(),
  intervalMs: o.interval * 1000,
  timeoutMs: o.timeout * 1000,
});

export function registerRollout(program: Command, api: () => ApiClient): void {
  const rollout = program.command('rollout').description('Start, watch and steer rollouts (through the Keelson API)');

  rollout
    .command('start')
    .description('Start a rollout from manifests; the same manifest again is a no-op')
    .requiredOption(FILE_FLAGS, `${FILE_HELP}; together they hold one rollout and the policy it names`, collectFiles)
    .option('--wait', 'show progress until the rollout completes (exit 0) or ends erroring (exit 1)')
    .option('--timeout <seconds>', 'longest --wait', seconds('--timeout'), 3600)
    .option('--interval <seconds>', 'poll period of --wait', seconds('--interval'), 1)
    .option('--json', 'print the API answer as JSON')
    .action((o: { file: string[]; wait?: boolean; json?: boolean } & FollowFlags) =>
      run(async () => {
        const manifests = await validManifests(o.file);
        if (!manifests) return EXIT.failed;
        const [one, ...more] = manifests.rollouts;
        if (!one || more.length > 0) {
          const names = manifests.rollouts.map((r) => r.name).join(', ');
          process.stderr.write(
            `${o.file.join(', ')}: holds ${manifests.rollouts.length} rollouts (${names}); rollout start takes one, ` +
              'rollout apply several\n',
          );
          return EXIT.failed;
        }
        const { body } = await api().request<Ref & { created: boolean }>('POST', '/v1/rollouts', {
          json: requestDocuments(manifests.documents, one),
        });
        if (o.json) printJson(body);
        else {
          process.stdout.write(
            `rollout ${body.name} ${body.created ? 'started' : 'already running with this spec'}: ${body.workflowId}\n` +
              `  Temporal UI: ${body.links.rollout}\n`,
          );
        }
        return o.wait ? follow(api(), body.name, followOpts(o)) : EXIT.ok;
      }),
    );

  rollout
    .command('apply')
    .description('Start each rollout of the manifests, or update the spec of the running rollout of that name')
    .requiredOption(FILE_FLAGS, FILE_HELP, collectFiles)
    .option('--json', 'print the API answer as JSON (a list of them for several rollouts)')
    .action((o: { file: string[]; json?: boolean }) =>
      run(async () => {
        const manifests = await validManifests(o.file);
        if (!manifests) return EXIT.failed;
        const client = api();
        const done: Applied[] = [];
        try {
          for (const r of manifests.rollouts) {
            const result = await applyOne(client, r.name, requestDocuments(manifests.documents, r));
            done.push(result);
            if (!o.json) {
              const gen = result.generation !== undefined ? ` (generation ${result.generation})` : '';
              process.stdout.write(
                `rollout ${result.name} ${result.action}${gen}: ${result.workflowId}\n  Temporal UI: ${result.links.rollout}\n`,
              );
            }
          }
        } finally {
          // What was applied before a failure is printed too; the failure then sets the exit code.
          if (o.json && done.length > 0) printJson(manifests.rollouts.length === 1 ? done[0] : done);
        }
        return EXIT.ok;
      }),
    );

  rollout
    .command('status <name>')
    .description('Skyhook-compatible status of a rollout, per node and package')
    .option('--watch', 'follow progress until the rollout settles')
    .option('--timeout <seconds>', 'longest --watch', seconds('--timeout'), 3600)
    .option('--interval <seconds>', 'poll period of --watch', seconds('--interval'), 1)
    .addOption(outputOption())
    .option('--json', 'the same as -o json')
    .action((name: string, o: { watch?: boolean; json?: boolean; output?: OutputFormat } & FollowFlags) =>
      run(async () => {
        const format = formatOf(o);
        if (o.watch && format !== undefined) {
          process.stderr.write(`keelson: --watch draws progress; -o ${format} is for a status without --watch\n`);
          return EXIT.usage;
        }
        if (o.watch) return follow(api(), name, followOpts(o));
        const client = api();
        const { body } = await client.request<StatusBody>('GET', `/v1/rollouts/${encodeURIComponent(name)}`);
        process.stdout.write(
          format === 'json' || format === 'yaml'
            ? structured(format, body)
            : rolloutStatusText(body, format === 'wide') + (await explainErroring(client, body)),
        );
        return EXIT.ok;
      }),
    );

  rollout
    .command('list')
    .description('Running rollouts of the cluster')
    .addOption(outputOption())
    .option('--json', 'the same as -o json')
    .action((o: { json?: boolean; output?: OutputFormat }) =>
      run(async () => {
        const format = formatOf(o);
        const { body } = await api().request<{ rollouts: RolloutListEntry[] }>('GET', '/v1/rollouts');
        process.stdout.write(
          format === 'json' || format === 'yaml'
            ? structured(format, body)
            : rolloutListText(body.rollouts, format === 'wide'),
        );
        return EXIT.ok;
      }),
    );

  for (const [kind, what] of [
    ['pause', 'suspend stage Jobs in flight and start no new stage'],
    ['resume', 'undo pause'],
    ['disable', 'stop the rollout (at least as strong as pause)'],
    ['enable', 'undo disable'],
  ] as const) {
    rollout
      .command(`${kind} <name>`)
      .description(`${kind[0]!.toUpperCase()}${kind.slice(1)} a rollout: ${what}`)
      .requiredOption('--reason <text>', 'why (kept in the workflow history, shown in the Temporal UI)')
      .option('--json', 'print the API answer as JSON')
      .action((name: string, o: { reason: string; json?: boolean }) =>
        run(async () => {
          const { body } = await api().request<Ref>('POST', `/v1/rollouts/${encodeURIComponent(name)}/${kind}`, {
            json: { reason: o.reason, actor: actor() },
          });
          if (o.json) printJson(body);
          else process.stdout.write(`rollout ${name}: ${kind} sent (${o.reason})\n`);
          return EXIT.ok;
        }),
      );
  }

  defineResetBatches(rollout.command('reset-batches'), api);

  rollout
    .command('delete <name>')
    .description('Delete a rollout: its workflow is cancelled and its nodes forget it')
    .option('-y, --yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .option('--json', 'print the API answer as JSON')
    .action((name: string, o: { yes?: boolean; json?: boolean }) =>
      run(async () => {
        const answer = await confirm(`delete rollout ${name}`, o.yes);
        if (answer !== 'yes') return NOT_CONFIRMED_EXIT[answer];
        const { body } = await api().request<Ref>('DELETE', `/v1/rollouts/${encodeURIComponent(name)}`);
        if (o.json) printJson(body);
        else process.stdout.write(`rollout ${name}: delete requested\n`);
        return EXIT.ok;
      }),
    );
}
