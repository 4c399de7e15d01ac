// OCI image references. Unlike Skyhook, which cuts at the first ':', the tag is looked for only in the last path
// component, so a registry with a port (`host:5000/team/img`) keeps its port.

const DOMAIN_LABEL = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(`^(?:${DOMAIN_LABEL}(?:\\.${DOMAIN_LABEL})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

export interface ImageReference {
  repository: string;
  tag?: string;
  digest?: string;
}

/** The parts of an image reference, or a reason it is not one. */
export function parseImageReference(image: string): ImageReference | { problem: string } {
  const [named, digest, ...extra] = image.split('@');
  if (extra.length > 0 || named === undefined || named === '') return { problem: 'is not an image reference' };
  if (digest !== undefined && !DIGEST.test(digest))
    return { problem: `has an invalid digest ${JSON.stringify(digest)}` };
  const slash = named.lastIndexOf('/');
  const colon = named.indexOf(':', slash + 1);
  const repository = colon >= 0 ? named.slice(0, colon) : named;
  const tag = colon >= 0 ? named.slice(colon + 1) : undefined;
  if (tag !== undefined && !TAG.test(tag)) return { problem: `has an invalid tag ${JSON.stringify(tag)}` };
  const parts = repository.split('/');
  const first = parts[0]!;
  const hasDomain = parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasDomain && !DOMAIN.test(first)) return { problem: `has an invalid registry host ${JSON.stringify(first)}` };
  const path = hasDomain ? parts.slice(1) : parts;
  const bad = path.find((c) => !PATH_COMPONENT.test(c));
  if (bad !== undefined) {
    return {
      problem: `has an invalid path component ${JSON.stringify(bad)} (lowercase letters, digits, '.', '_', '-')`,
    };
  }
  return { repository, ...(tag !== undefined && { tag }), ...(digest !== undefined && { digest }) };
}
