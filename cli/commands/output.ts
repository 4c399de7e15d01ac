import { InvalidArgumentError, Option } from 'commander';
import YAML from 'yaml';
import { ApiError } from '../../client/http-client';

// Exit codes of the API-backed commands (documented in ../main.ts and docs/cli.md) and how errors are printed.

export const EXIT = {
  ok: 0,
  /** Bad input (the API's 400, an unreadable file) or a rollout that ended erroring, or a wait that timed out. */
  failed: 1,
  usage: 2,
  /** The API or Temporal could not be reached (no answer, 503, 5xx). */
  unavailable: 3,
  notFound: 4,
  conflict: 5,
  unauthorized: 6,
} as const;

export function exitCodeOf(err: ApiError): number {
  if (err.status === 0 || err.status >= 500) return EXIT.unavailable;
  if (err.status === 404) return EXIT.notFound;
  if (err.status === 409) return EXIT.conflict;
  if (err.status === 401 || err.status === 403) return EXIT.unauthorized;
  return EXIT.failed;
}

/** Prints an API error to stderr (one `path: message` line per field error) and returns its exit code. */
export function reportError(err: unknown): number {
  if (!(err instanceof ApiError)) throw err;
  if (err.body.errors?.length) for (const e of err.body.errors) process.stderr.write(`${e.path}: ${e.message}\n`);
  else process.stderr.write(`keelson: ${err.message}\n`);
  if (err.status === 401) {
    process.stderr.write(
      'keelson: give a token the API accepts: --token, KEELSON_API_TOKEN, or a context (keelson config set-context)\n',
    );
  }
  return exitCodeOf(err);
}

/** Runs a command body; its result, or the error's, becomes the exit code. */
export function run(body: () => Promise<number | void>): Promise<void> {
  return body().then(
    (code) => void (process.exitCode = code ?? EXIT.ok),
    (err: unknown) => void (process.exitCode = reportError(err)),
  );
}

export const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/** A plain text table: columns padded to their widest cell. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export const OUTPUT_FORMATS = ['json', 'yaml', 'wide'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Commander's parser of `-o`: a bad value is a usage error naming the flag, the value and the formats there are. */
export function parseOutputFormat(value: string): OutputFormat {
  const format = OUTPUT_FORMATS.find((f) => f === value);
  if (format === undefined) {
    throw new InvalidArgumentError(
      `-o/--output: ${JSON.stringify(value)} is not allowed; use ${OUTPUT_FORMATS.slice(0, -1).join(', ')} or ${OUTPUT_FORMATS.at(-1)}`,
    );
  }
  return format;
}

/** `-o json|yaml|wide` of the listing and status commands. */
export const outputOption = () =>
  new Option('-o, --output <format>', 'json, yaml, or wide (a table with more columns)').argParser(parseOutputFormat);

/** The format asked for: `-o`, else `--json` (kept from before `-o`); undefined is the plain table. */
export const formatOf = (o: { output?: OutputFormat; json?: boolean }): OutputFormat | undefined =>
  o.output ?? (o.json ? 'json' : undefined);

/** The text of `value` as JSON or YAML, for scripts. */
export function structured(format: 'json' | 'yaml', value: unknown): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : YAML.stringify(value);
}
