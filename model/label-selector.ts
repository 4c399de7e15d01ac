import { z } from 'zod';

// metav1.LabelSelector: its schema (with the apiserver's key and value rules) and a pure matcher.

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `label key ${JSON.stringify(key)} has an invalid prefix (must be a DNS subdomain of at most 253 characters)`;
  }
  if (name.length > 63 || !NAME.test(name)) {
    return `label key ${JSON.stringify(key)} is invalid (name part: at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)`;
  }
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value === '' || (value.length <= 63 && NAME.test(value))) return undefined;
  return `label value ${JSON.stringify(value)} is invalid (at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)`;
}

const LabelKey = z.string().superRefine((key, ctx) => {
  const problem = labelKeyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
const LabelValue = z.string().superRefine((value, ctx) => {
  const problem = labelValueProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const SelectorRequirementSchema = z
  .strictObject({
    key: LabelKey,
    operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
    values: z.array(LabelValue).optional(),
  })
  .superRefine((req, ctx) => {
    const count = req.values?.length ?? 0;
    if ((req.operator === 'In' || req.operator === 'NotIn') && count === 0) {
      ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${req.operator} needs at least one value` });
    }
    if ((req.operator === 'Exists' || req.operator === 'DoesNotExist') && count > 0) {
      ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${req.operator} takes no values` });
    }
  });

// Keys are checked here rather than with a key schema, so the issue lands on the key with its own message.
const MatchLabelsSchema = z.record(z.string(), LabelValue).superRefine((labels, ctx) => {
  for (const key of Object.keys(labels)) {
    const problem = labelKeyProblem(key);
    if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
  }
});

export const LabelSelectorSchema = z.strictObject({
  matchLabels: MatchLabelsSchema.optional(),
  matchExpressions: z.array(SelectorRequirementSchema).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;
export type Labels = Readonly<Record<string, string>>;

/** An empty selector matches everything, as in Kubernetes. */
export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((req) => {
    const has = Object.hasOwn(labels, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        return has && values.includes(labels[req.key]!);
      case 'NotIn':
        return !has || !values.includes(labels[req.key]!);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
    }
  });
}

/** Canonical form, so two selectors that select the same way compare equal (Skyhook uses DeepEqual). */
export function canonicalSelector(selector: LabelSelector): string {
  const labels = Object.entries(selector.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const exprs = (selector.matchExpressions ?? [])
    .map((r) => JSON.stringify([r.key, r.operator, [...(r.values ?? [])].sort()]))
    .sort();
  return JSON.stringify([labels, exprs]);
}
