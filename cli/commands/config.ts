import type { Command } from 'commander';
import { cliConfigPath, readCliConfig, writeCliConfig } from '../../client/cli-config-file';
import { setContext, useContext, type CliConfig } from '../../model/cli-config';
import { EXIT, table } from './output';

// `keelson config ...`: the contexts of the config file (model/cli-config.ts), each an API URL and its token. Tokens
// are never printed.

/** Applies a change to the config file: written when it succeeds, the error on stderr (exit 1) when not. */
function change(edit: (config: CliConfig, file: string) => { config: CliConfig } | { error: string }, done: string) {
  const file = cliConfigPath();
  const result = edit(readCliConfig(file), file);
  if ('error' in result) {
    process.stderr.write(`keelson: ${result.error}\n`);
    process.exitCode = EXIT.failed;
    return;
  }
  writeCliConfig(file, result.config);
  process.stdout.write(`${done} (${file})\n`);
}

export function registerConfig(program: Command): void {
  const config = program
    .command('config')
    .description('Contexts of the config file ($KEELSON_CONFIG, default ~/.config/keelson/config.yaml)');

  config
    .command('get-contexts')
    .description('The contexts: a * marks the current one; how each authenticates, never the token itself')
    .action(() => {
      const file = cliConfigPath();
      const { contexts, 'current-context': current } = readCliConfig(file);
      if (contexts.length === 0) {
        process.stdout.write(`no contexts in ${file}; add one with keelson config set-context\n`);
        return;
      }
      const auth = (c: CliConfig['contexts'][number]) =>
        c.token !== undefined ? 'token' : c.tokenFile !== undefined ? `tokenFile ${c.tokenFile}` : 'none';
      process.stdout.write(
        table([
          ['CURRENT', 'NAME', 'URL', 'AUTH'],
          ...contexts.map((c) => [c.name === current ? '*' : '', c.name, c.url, auth(c)]),
        ]),
      );
    });

  config
    .command('use-context <name>')
    .description('Make a context the current one')
    .action((name: string) => change((c, file) => useContext(c, name, file), `current context: ${name}`));

  config
    .command('set-context <name>')
    .description('Add a context, or change the fields given of an existing one (the first one added becomes current)')
    .option('--url <url>', 'the Keelson API, e.g. https://keelson.example.com (needed for a new context)')
    // The program's own --token (which commander reads wherever it stands) is the context's token here.
    .option('--token <token>', 'the bearer token, kept in the file (readable by you only)')
    .option(
      '--token-file <path>',
      'a file whose first line is the token, read at each use (relative: to the config file)',
    )
    .action((name: string, _o: unknown, command: Command) => {
      const o = command.optsWithGlobals<{ url?: string; token?: string; tokenFile?: string }>();
      const fields = {
        ...(o.url !== undefined && { url: o.url }),
        ...(o.token !== undefined && { token: o.token }),
        ...(o.tokenFile !== undefined && { tokenFile: o.tokenFile }),
      };
      change((c) => setContext(c, { name, ...fields }), `context ${name} set`);
    });
}
