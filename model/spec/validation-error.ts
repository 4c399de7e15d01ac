import type { z } from 'zod';

// Validation errors as `{path, message}`: the path names the field, the message the bad value and the rule.

export interface ValidationError {
  path: string;
  message: string;
}

export function formatPath(base: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => {
    if (typeof key === 'number') return `${acc}[${key}]`;
    // Keys come from the manifest: a hostile one (tens of KB) is shortened like a described value.
    const full = String(key);
    const text = full.length > 80 ? `${full.slice(0, 77)}...` : full;
    return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(text) ? `${acc}.${text}` : `${acc}[${JSON.stringify(text)}]`;
  }, base);
}

export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Zod's default messages omit the value; this error map puts it in. Messages set by the schemas are kept. */
export const errorMap: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      return iss.input === undefined
        ? `is required (${iss.expected})`
        : `expected ${iss.expected}, got ${describeValue(iss.input)}`;
    case 'too_small':
      return `${describeValue(iss.input)} is below the minimum ${String(iss.minimum)}`;
    case 'too_big':
      return `${describeValue(iss.input)} is above the maximum ${String(iss.maximum)}`;
    case 'invalid_value':
      return `${describeValue(iss.input)} is not one of ${iss.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return `unknown field${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    default:
      return undefined;
  }
};

export function toValidationErrors(base: string, error: z.ZodError): ValidationError[] {
  return error.issues.map((issue) => ({ path: formatPath(base, issue.path), message: shorten(issue.message) }));
}

/** Schema messages may quote the value they refuse; a hostile one (tens of KB) is cut in the middle. */
function shorten(message: string, max = 300): string {
  return message.length <= max ? message : `${message.slice(0, max - 60)} ... ${message.slice(-55)}`;
}
