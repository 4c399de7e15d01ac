import { DeploymentPolicySchema, type DeploymentPolicy } from './deployment-policy';
import { metadataPrefix, type RolloutSpec } from './rollout-spec';
import { SkyhookManifestSchema, type SkyhookManifest } from './skyhook';
import { describeValue, errorMap, toValidationErrors, type ValidationError } from './validation-error';

// Turns the documents of a manifest file (already parsed from YAML or JSON) into RolloutSpecs.

export interface ParseOptions {
  /** Policies known besides those in the documents (e.g. already stored); the documents' own win on a name clash. */
  policies?: readonly DeploymentPolicy[];
}

export interface ParseResult {
  rollouts: RolloutSpec[];
  policies: DeploymentPolicy[];
  errors: ValidationError[];
  /** Documents of a kind Keelson reads; 0 means the file holds no rollout at all. */
  recognized: number;
}

const ROLLOUT_KINDS = new Set(['Skyhook', 'NodeWright']);

function documentLabel(doc: Record<string, unknown>, index: number): string {
  const kind = doc['kind'];
  const metadata = doc['metadata'];
  const name = typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>)['name'] : '';
  // A label is echoed in every error path; a hostile kind or name (tens of KB) falls back to the document index.
  return typeof kind === 'string' && typeof name === 'string' && name !== '' && kind.length + name.length <= 300
    ? `${kind}/${name}`
    : `document[${index}]`;
}

export function parseRolloutDocuments(docs: readonly unknown[], opts: ParseOptions = {}): ParseResult {
  const errors: ValidationError[] = [];
  const policies: DeploymentPolicy[] = [];
  const manifests: SkyhookManifest[] = [];
  const invalidPolicyNames = new Set<string>();
  let recognized = 0;

  docs.forEach((doc, index) => {
    if (doc === null || doc === undefined) return; // an empty YAML document, e.g. after a trailing `---`
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      errors.push({ path: `document[${index}]`, message: `expected a mapping, got ${describeValue(doc)}` });
      return;
    }
    const record = doc as Record<string, unknown>;
    const label = documentLabel(record, index);
    const kind = record['kind'];
    if (kind === 'DeploymentPolicy' || (typeof kind === 'string' && ROLLOUT_KINDS.has(kind))) recognized++;
    if (kind === 'DeploymentPolicy') {
      const parsed = DeploymentPolicySchema.safeParse(doc, { error: errorMap });
      if (parsed.success) policies.push(parsed.data);
      else {
        errors.push(...toValidationErrors(label, parsed.error));
        if (label !== `document[${index}]`) invalidPolicyNames.add(label.slice('DeploymentPolicy/'.length));
      }
    } else if (typeof kind === 'string' && ROLLOUT_KINDS.has(kind)) {
      const parsed = SkyhookManifestSchema.safeParse(doc, { error: errorMap });
      if (parsed.success) manifests.push(parsed.data);
      else errors.push(...toValidationErrors(label, parsed.error));
    } else {
      errors.push({
        path: `${label}.kind`,
        message: `${describeValue(kind)} is not a kind Keelson reads (Skyhook, NodeWright, DeploymentPolicy)`,
      });
    }
  });

  errors.push(...duplicateNames(policies.map((p) => `DeploymentPolicy/${p.metadata.name}`)));
  errors.push(...duplicateNames(manifests.map((m) => `${m.kind}/${m.metadata.name}`)));

  const known = new Map<string, DeploymentPolicy>();
  for (const p of [...(opts.policies ?? []), ...policies]) known.set(p.metadata.name, p);

  const rollouts: RolloutSpec[] = [];
  for (const m of manifests) {
    const policyName = m.spec.deploymentPolicy;
    const policy = policyName === '' ? undefined : known.get(policyName);
    if (policyName !== '' && !policy) {
      if (!invalidPolicyNames.has(policyName)) {
        errors.push({
          path: `${m.kind}/${m.metadata.name}.spec.deploymentPolicy`,
          message: `${JSON.stringify(policyName)} names no DeploymentPolicy in this file or among the known policies`,
        });
      }
      continue;
    }
    const prefix = metadataPrefix(m.kind);
    const annotations = m.metadata.annotations ?? {};
    rollouts.push({
      name: m.metadata.name,
      kind: m.kind,
      paused: annotations[`${prefix}pause`] === 'true',
      disabled: annotations[`${prefix}disable`] === 'true',
      spec: m.spec,
      policy: policy ? { name: policy.metadata.name, spec: policy.spec } : null,
      resetBatchStateOnCompletion:
        m.spec.deploymentPolicyOptions?.resetBatchStateOnCompletion ??
        policy?.spec.resetBatchStateOnCompletion ??
        false,
    });
  }
  return { rollouts, policies, errors, recognized };
}

// Skyhook and NodeWright share one rollout namespace in Keelson, so a clash across the two kinds counts too.
function duplicateNames(labels: readonly string[]): ValidationError[] {
  const seen = new Set<string>();
  const errors: ValidationError[] = [];
  for (const label of labels) {
    const name = label.slice(label.indexOf('/') + 1);
    const id = label.startsWith('DeploymentPolicy/') ? label : name;
    if (seen.has(id)) {
      errors.push({ path: `${label}.metadata.name`, message: `${JSON.stringify(name)} is defined twice in the file` });
    }
    seen.add(id);
  }
  return errors;
}
