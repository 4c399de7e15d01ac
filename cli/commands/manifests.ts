import { parseRolloutDocuments, type RolloutSpec, type ValidationError, type ValidationWarning } from '../../model';
import { readManifestSources } from '../../client/manifest-file';

// The manifests that `validate`, `rollout start` and `rollout apply` read: any number of `-f` (a file, a directory of
// them, or `-` for stdin), validated together so that a policy may sit in another document or another file.

export const FILE_FLAGS = '-f, --file <path>';
export const FILE_HELP = 'a manifest file (YAML or JSON), a directory of them, or - (stdin); repeatable';

/** Commander's collector for a repeatable `-f`. */
export const collectFiles = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

export interface Manifests {
  /** Every document read, in order. */
  documents: unknown[];
  rollouts: RolloutSpec[];
  /** What blocks: unreadable sources, every validation error, no rollout at all. */
  errors: ValidationError[];
  warnings: ValidationWarning[];
}

export async function loadManifests(args: readonly string[], stdin?: () => Promise<string>): Promise<Manifests> {
  const read = await readManifestSources(args, stdin);
  if ('problems' in read) return { documents: [], rollouts: [], errors: read.problems, warnings: [] };
  const { rollouts, errors, warnings, recognized } = parseRolloutDocuments(read.documents, { origins: read.origins });
  const none =
    recognized === 0
      ? 'no Skyhook, NodeWright or DeploymentPolicy document'
      : errors.length === 0 && rollouts.length === 0
        ? 'no Skyhook or NodeWright document'
        : undefined;
  const noRollout = none ? [{ path: read.sources.join(', '), message: `holds no rollout (${none})` }] : [];
  return { documents: read.documents, rollouts, errors: [...errors, ...noRollout], warnings };
}

/** Errors as `path: message` lines, then warnings as `warning: path: message`, all on stderr. */
export function printFindings(m: Pick<Manifests, 'errors' | 'warnings'>): void {
  for (const e of m.errors) process.stderr.write(`${e.path}: ${e.message}\n`);
  for (const w of m.warnings) process.stderr.write(`warning: ${w.path}: ${w.message}\n`);
}

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/**
 * The documents of one API request for a rollout: its own and the policy it names, wherever they were read from. The
 * API takes one rollout per request and validates it again; policies travel as documents beside it.
 */
export function requestDocuments(documents: readonly unknown[], rollout: RolloutSpec): unknown[] {
  const find = (kind: string, name: string) =>
    documents.filter((d) => field(d, 'kind') === kind && field(field(d, 'metadata'), 'name') === name);
  return [
    ...find(rollout.kind, rollout.name),
    ...(rollout.policy ? find('DeploymentPolicy', rollout.policy.name) : []),
  ];
}
