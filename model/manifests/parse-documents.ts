import { closestName } from './closest-name';
import { MANIFEST_KINDS, POLICY_API_VERSIONS, POLICY_KIND, ROLLOUT_KINDS } from '../wire';
import { manifestControls } from './controls';
import { DeploymentPolicySchema, type DeploymentPolicy } from './deployment-policy';
import type { RolloutSpec } from './rollout-spec';
import { SkyhookManifestSchema, type SkyhookManifest } from './skyhook';
import { describeValue, errorMap, toValidationErrors, type ValidationError } from './validation-error';
import { policyWarnings, rolloutWarnings, type ValidationWarning } from './warnings';

const MAX_SUGGESTION_CANDIDATES = 50;

// Turns manifest documents (already parsed from YAML or JSON, from one file or many) into RolloutSpecs. Policies are
// matched by name across all the documents, in any order.

export interface ParseOptions {
  /** Policies known besides those in the documents (e.g. already stored); the documents' own win on a name clash. */
  policies?: readonly DeploymentPolicy[];
  /** Where each document came from (e.g. `policies.yaml[1]`), naming in errors a document with no kind and name. */
  origins?: readonly string[];
}

export interface ParseResult {
  rollouts: RolloutSpec[];
  policies: DeploymentPolicy[];
  /** Every error of every document, at once. */
  errors: ValidationError[];
  /** What valid documents say that is likely a mistake, or accepted but not applied yet. */
  warnings: ValidationWarning[];
  /** Documents of a kind Keelson reads; 0 means the documents hold no rollout at all. */
  recognized: number;
}

const isRolloutKind = (kind: unknown): kind is keyof typeof ROLLOUT_KINDS =>
  typeof kind === 'string' && Object.hasOwn(ROLLOUT_KINDS, kind);

/** A string field of a mapping, or undefined: documents are read before (and whether or not) they validate. */
function text(value: unknown, key: string): string | undefined {
  const field = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === 'string' ? field : undefined;
}

function documentLabel(doc: Record<string, unknown>, origin: string): string {
  const kind = text(doc, 'kind');
  const name = text(doc['metadata'], 'name');
  // A label is echoed in every error path; a hostile kind or name (tens of KB) falls back to the document's origin.
  return kind !== undefined && name ? (kind.length + name.length <= 300 ? `${kind}/${name}` : origin) : origin;
}

function notReadMessage(doc: Record<string, unknown>): string {
  const shown = (v: unknown) => (v === undefined ? 'none' : describeValue(v));
  const kind = doc['kind'];
  const near = typeof kind === 'string' ? closestName(kind, MANIFEST_KINDS) : undefined;
  return (
    `found apiVersion ${shown(doc['apiVersion'])} and kind ${shown(kind)}, which is not a rollout or a policy` +
    (near ? `; did you mean kind ${JSON.stringify(near)}?` : '') +
    ` (Keelson reads kind Skyhook of ${ROLLOUT_KINDS.Skyhook}, NodeWright of ${ROLLOUT_KINDS.NodeWright}, ` +
    `DeploymentPolicy of ${POLICY_API_VERSIONS.join(' or ')})`
  );
}

interface Named {
  label: string;
  name: string;
}

/** A rollout document as written, for the checks across documents that do not need it to be valid. */
interface RolloutRef {
  label: string;
  name: string | undefined;
  policy: string | undefined;
}

export function parseRolloutDocuments(docs: readonly unknown[], opts: ParseOptions = {}): ParseResult {
  const errors: ValidationError[] = [];
  const warnings: ValidationWarning[] = [];
  const policies: DeploymentPolicy[] = [];
  const policyNames: Named[] = [];
  const invalidPolicyNames = new Set<string>();
  const refs: RolloutRef[] = [];
  const manifests: { manifest: SkyhookManifest; label: string; doc: Record<string, unknown> }[] = [];
  let recognized = 0;

  docs.forEach((doc, index) => {
    if (doc === null || doc === undefined) return; // an empty YAML document, e.g. after a trailing `---`
    const origin = opts.origins?.[index] ?? `document[${index}]`;
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      errors.push({ path: origin, message: `expected a mapping, got ${describeValue(doc)}` });
      return;
    }
    const record = doc as Record<string, unknown>;
    const label = documentLabel(record, origin);
    const kind = record['kind'];
    if (kind === POLICY_KIND) {
      recognized++;
      const name = text(record['metadata'], 'name');
      if (name !== undefined) policyNames.push({ label, name });
      const parsed = DeploymentPolicySchema.safeParse(doc, { error: errorMap });
      if (parsed.success) {
        policies.push(parsed.data);
        warnings.push(...policyWarnings(label, parsed.data));
      } else {
        errors.push(...toValidationErrors(label, parsed.error));
        if (name !== undefined) invalidPolicyNames.add(name);
      }
    } else if (isRolloutKind(kind)) {
      recognized++;
      refs.push({ label, name: text(record['metadata'], 'name'), policy: text(record['spec'], 'deploymentPolicy') });
      const parsed = SkyhookManifestSchema.safeParse(doc, { error: errorMap });
      if (parsed.success) manifests.push({ manifest: parsed.data, label, doc: record });
      else errors.push(...toValidationErrors(label, parsed.error));
    } else {
      errors.push({ path: `${label}.kind`, message: notReadMessage(record) });
    }
  });

  errors.push(...duplicateNames(policyNames));
  // Skyhook and NodeWright share one rollout namespace in Keelson, so a clash across the two kinds counts too.
  errors.push(...duplicateNames(refs.flatMap(({ label, name }) => (name === undefined ? [] : [{ label, name }]))));

  const known = new Map<string, DeploymentPolicy>();
  for (const p of [...(opts.policies ?? []), ...policies]) known.set(p.metadata.name, p);
  for (const ref of refs) {
    if (!ref.policy || known.has(ref.policy) || invalidPolicyNames.has(ref.policy)) continue;
    // Suggestions cost an edit distance per known name: past a few dozen names they are not worth a slow request.
    const near = known.size <= MAX_SUGGESTION_CANDIDATES ? closestName(ref.policy, [...known.keys()]) : undefined;
    errors.push({
      path: `${ref.label}.spec.deploymentPolicy`,
      message:
        `${describeValue(ref.policy)} names no DeploymentPolicy among the documents given or the known policies` +
        (near ? `; did you mean ${JSON.stringify(near)}?` : ''),
    });
  }

  const rollouts: RolloutSpec[] = [];
  for (const { manifest: m, label, doc } of manifests) {
    const policyName = m.spec.deploymentPolicy;
    const policy = policyName === '' ? undefined : known.get(policyName);
    if (policyName !== '' && !policy) continue;
    warnings.push(...rolloutWarnings(label, m, writtenImages(doc)));
    rollouts.push({
      name: m.metadata.name,
      kind: m.kind,
      // spec.pause counts too (Skyhook's operator ignores it; Keelson's docs promise a paused start).
      ...manifestControls(m.kind, m.metadata.annotations ?? {}, m.spec.pause),
      spec: m.spec,
      policy: policy ? { name: policy.metadata.name, spec: policy.spec } : null,
      resetBatchStateOnCompletion:
        m.spec.deploymentPolicyOptions?.resetBatchStateOnCompletion ??
        policy?.spec.resetBatchStateOnCompletion ??
        false,
    });
  }
  return { rollouts, policies, errors, warnings, recognized };
}

/** Each package's image as written, tag included, from a document that validated (so the shape holds). */
function writtenImages(doc: Record<string, unknown>): Record<string, string> {
  const packages = (doc['spec'] as { packages?: Record<string, { image: string }> | null }).packages ?? {};
  return Object.fromEntries(Object.entries(packages).map(([name, pkg]) => [name, pkg.image]));
}

function duplicateNames(docs: readonly Named[]): ValidationError[] {
  const seen = new Set<string>();
  const errors: ValidationError[] = [];
  for (const { label, name } of docs) {
    if (seen.has(name)) {
      errors.push({
        path: `${label}.metadata.name`,
        message: `${describeValue(name)} is defined twice among the documents given`,
      });
    }
    seen.add(name);
  }
  return errors;
}
