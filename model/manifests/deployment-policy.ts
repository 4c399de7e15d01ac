import { z } from 'zod';
import { canonicalSelector, LabelSelectorSchema } from '../label-selector';
import { POLICY_API_VERSIONS, POLICY_KIND } from '../wire';
import { whenParsed } from './validation-error';

// DeploymentPolicy (§2.2): budgets, strategies with the mutating webhook's defaults, compartments.

export const DEFAULT_COMPARTMENT = '__default__';

// YAML `fixed:` with nothing after it is null; the mutating webhook fills such an empty strategy with defaults.
const orEmpty = (v: unknown) => (v === null ? {} : v);

const common = {
  initialBatch: z.int().min(1).default(1),
  batchThreshold: z.int().min(1).max(100).default(100),
  failureThreshold: z.int().min(1).nullable().default(null),
  safetyLimit: z.int().min(1).max(100).default(50),
};
export const FixedStrategySchema = z.strictObject(common);
export const LinearStrategySchema = z.strictObject({ ...common, delta: z.int().min(1).default(1) });
export const ExponentialStrategySchema = z.strictObject({ ...common, growthFactor: z.int().min(2).default(2) });

export const StrategySchema = z
  .strictObject({
    fixed: z.preprocess(orEmpty, FixedStrategySchema).optional(),
    linear: z.preprocess(orEmpty, LinearStrategySchema).optional(),
    exponential: z.preprocess(orEmpty, ExponentialStrategySchema).optional(),
  })
  // Counts the strategies present whatever their parameters: a bad parameter does not hide a second strategy.
  .superRefine((s, ctx) => {
    const set = Object.entries(s).filter(([, v]) => v !== undefined).length;
    if (set !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `sets ${set} strategies: set exactly one of fixed, linear, exponential`,
      });
    }
  }, whenParsed());
export type Strategy = z.infer<typeof StrategySchema>;

/** The strategy as a tagged value, which the batch math works on. */
export type StrategyParams =
  | ({ type: 'fixed' } & z.infer<typeof FixedStrategySchema>)
  | ({ type: 'linear' } & z.infer<typeof LinearStrategySchema>)
  | ({ type: 'exponential' } & z.infer<typeof ExponentialStrategySchema>);

export function strategyParams(strategy: Strategy): StrategyParams {
  if (strategy.fixed) return { type: 'fixed', ...strategy.fixed };
  if (strategy.linear) return { type: 'linear', ...strategy.linear };
  if (strategy.exponential) return { type: 'exponential', ...strategy.exponential };
  throw new Error('strategyParams: a validated strategy has exactly one type');
}

export const BudgetSchema = z
  .strictObject({
    percent: z.int().min(1).max(100).nullish(),
    count: z.int().min(1).nullish(),
  })
  .superRefine((b, ctx) => {
    if (b.percent != null && b.count != null) {
      ctx.addIssue({ code: 'custom', message: `sets percent ${b.percent} and count ${b.count}: set exactly one` });
    } else if (b.percent == null && b.count == null) {
      ctx.addIssue({ code: 'custom', message: 'sets neither percent nor count: set exactly one' });
    }
  });
export type Budget = z.infer<typeof BudgetSchema>;

export const CompartmentSchema = z.strictObject({
  name: z.string().min(1),
  selector: LabelSelectorSchema,
  budget: BudgetSchema,
  strategy: StrategySchema.optional(),
});
export type Compartment = z.infer<typeof CompartmentSchema>;

/**
 * The compartments rule runs once every compartment is a mapping whose name and selector parsed, even when another
 * field of a compartment (its budget, say) failed.
 */
const compartmentsParsed = {
  when: ({ value, issues }: z.core.ParsePayload): boolean =>
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !issues.some((issue) => {
      const [field, , inner] = issue.path ?? [];
      return field === 'compartments' && (inner === undefined || inner === 'name' || inner === 'selector');
    }),
};

export const DeploymentPolicySpecSchema = z
  .strictObject({
    resetBatchStateOnCompletion: z.boolean().default(true),
    default: z.strictObject({ budget: BudgetSchema, strategy: StrategySchema }),
    compartments: z.array(CompartmentSchema).default([]),
  })
  .superRefine((spec, ctx) => {
    const seen = new Map<string, number>();
    const selectors = new Map<string, string>();
    spec.compartments.forEach((c, i) => {
      if (c.name === DEFAULT_COMPARTMENT) {
        ctx.addIssue({
          code: 'custom',
          path: ['compartments', i, 'name'],
          message: `${JSON.stringify(c.name)} is reserved for nodes that match no compartment`,
        });
      }
      const first = seen.get(c.name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['compartments', i, 'name'],
          message: `${JSON.stringify(c.name)} is already the name of compartments[${first}]: names must be unique`,
        });
      } else seen.set(c.name, i);
      const key = canonicalSelector(c.selector);
      const same = selectors.get(key);
      if (same !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['compartments', i, 'selector'],
          message: `is identical to the selector of compartment ${JSON.stringify(same)}: selectors must differ`,
        });
      } else selectors.set(key, c.name);
    });
  }, compartmentsParsed);
export type DeploymentPolicySpec = z.infer<typeof DeploymentPolicySpecSchema>;

export const DeploymentPolicySchema = z.object({
  apiVersion: z.enum(POLICY_API_VERSIONS),
  kind: z.literal(POLICY_KIND),
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: DeploymentPolicySpecSchema,
});
export type DeploymentPolicy = z.infer<typeof DeploymentPolicySchema>;
