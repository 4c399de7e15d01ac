import { RolloutSpecSchema, errorMap, toValidationErrors, type RolloutSpec } from '../model';
import { InvalidError } from './errors';

/** Re-validates a RolloutSpec handed to the library (the schema's transforms are idempotent). */
export function validSpec(spec: unknown): RolloutSpec {
  const parsed = RolloutSpecSchema.safeParse(spec, { error: errorMap });
  if (!parsed.success) throw new InvalidError(toValidationErrors('spec', parsed.error));
  return parsed.data;
}
