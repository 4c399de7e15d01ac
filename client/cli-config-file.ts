import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import YAML from 'yaml';
import { EMPTY_CLI_CONFIG, parseCliConfig, type CliConfig, type TokenSetting } from '../model/cli-config';

// The CLI's config file on disk (model/cli-config.ts has its rules): where it is, reading it, writing it (owner only:
// it may hold tokens), and reading a context's token file.

type Env = Readonly<Record<string, string | undefined>>;

/** $KEELSON_CONFIG, else config.yaml under $XDG_CONFIG_HOME/keelson (default ~/.config/keelson). */
export function cliConfigPath(env: Env = process.env): string {
  if (env.KEELSON_CONFIG) return resolve(env.KEELSON_CONFIG);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'keelson', 'config.yaml');
}

/** The config in `file`; a missing file has no contexts. Throws one line per problem, each naming the file and field. */
export function readCliConfig(file: string): CliConfig {
  if (!existsSync(file)) return EMPTY_CLI_CONFIG;
  const parsed = parseCliConfig(readFileSync(file, 'utf8'), file);
  if ('errors' in parsed) throw new Error(parsed.errors.join('\n'));
  return parsed.config;
}

export function writeCliConfig(file: string, config: CliConfig): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, YAML.stringify(config), { mode: 0o600 });
}

/** The token itself: given, or the first line of its file (relative to the config file's folder). */
export function tokenOf(setting: TokenSetting, configFile: string): string {
  if ('token' in setting) return setting.token;
  const path = resolve(dirname(configFile), setting.tokenFile);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`${configFile}: ${setting.from}: tokenFile ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  const token = text.split(/\r?\n/)[0]!.trim();
  if (token === '') throw new Error(`${configFile}: ${setting.from}: tokenFile ${path} is empty`);
  return token;
}
