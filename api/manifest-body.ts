import { parseRolloutDocuments, type RolloutSpec } from '../model';
import { imagePolicyErrors, OPEN_IMAGE_POLICY, type ImagePolicy } from '../model/image-policy';
import { parseManifestText } from '../client/manifest-file';
import { InvalidError } from '../client/errors';

// A request body holding a manifest: YAML text (one or many documents), or JSON (one document, or a list of them).
// It must hold exactly one Skyhook or NodeWright rollout, with any DeploymentPolicy documents it names.

export function documentsOf(body: unknown): unknown[] {
  if (typeof body === 'string') {
    const read = parseManifestText(body);
    if ('problem' in read) throw new InvalidError([{ path: 'body', message: `manifest ${read.problem}` }]);
    return read.documents;
  }
  if (Array.isArray(body)) return body;
  if (body === undefined || body === null)
    throw new InvalidError([{ path: 'body', message: 'is required (a manifest)' }]);
  return [body];
}

/** The one rollout of a body, checked against the image policy (the worker checks it again: workflows/rollout/workflow.ts). */
export function rolloutFromBody(body: unknown, policy: ImagePolicy = OPEN_IMAGE_POLICY): RolloutSpec {
  const { rollouts, errors, recognized } = parseRolloutDocuments(documentsOf(body));
  if (errors.length > 0) throw new InvalidError(errors);
  if (recognized === 0 || rollouts.length === 0) {
    throw new InvalidError([{ path: 'body', message: 'holds no rollout (no Skyhook or NodeWright document)' }]);
  }
  if (rollouts.length > 1) {
    throw new InvalidError([
      {
        path: 'body',
        message: `holds ${rollouts.length} rollouts (${rollouts.map((r) => r.name).join(', ')}); send one per request`,
      },
    ]);
  }
  const rollout = rollouts[0]!;
  const refused = imagePolicyErrors(rollout, policy, `${rollout.kind}/${rollout.name}.spec.packages`);
  if (refused.length > 0) throw new InvalidError(refused);
  return rollout;
}
