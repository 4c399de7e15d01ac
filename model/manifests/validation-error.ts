import type { z } from 'zod';
import { closestName } from './closest-name';

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

/** Unknown fields named one by one in a mapping; past this many, the rest are counted (hostile input has thousands). */
const MAX_UNKNOWN_FIELDS = 20;

/** The field names of the strict object that refused a key, from the issue's schema. */
function fieldsOf(inst: unknown): string[] {
  const def = (inst as { _zod?: { def?: { type?: string; shape?: Record<string, unknown> } } } | undefined)?._zod?.def;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

function unknownFieldMessage(key: string, fields: readonly string[]): string {
  const near = closestName(key, fields);
  if (near !== undefined) return `unknown field; did you mean ${JSON.stringify(near)}?`;
  return fields.length > 0 ? `unknown field; the fields here are ${fields.join(', ')}` : 'unknown field';
}

/**
 * Zod's default messages omit the value; this error map puts it in, with the closest allowed name of a misspelt field
 * or enum value. Messages set by the schemas are kept. An unknown-fields message holds one line per key (the last one
 * counting any past MAX_UNKNOWN_FIELDS): toValidationErrors gives each its own error at that key's path.
 */
export const errorMap: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      return iss.input === undefined
        ? `is required (${iss.expected})`
        : `expected ${iss.expected}, got ${describeValue(iss.input)}`;
    // A string's bound is on its length, which the message gives: "" is not itself "below the minimum 1".
    case 'too_small':
      return iss.origin === 'string'
        ? `${describeValue(iss.input)} has length ${String(iss.input).length}, below the minimum ${String(iss.minimum)}`
        : `${describeValue(iss.input)} is below the minimum ${String(iss.minimum)}`;
    case 'too_big':
      return iss.origin === 'string'
        ? `${describeValue(iss.input)} has length ${String(iss.input).length}, above the maximum ${String(iss.maximum)}`
        : `${describeValue(iss.input)} is above the maximum ${String(iss.maximum)}`;
    case 'invalid_value': {
      const allowed = `${describeValue(iss.input)} is not one of ${iss.values.map((v) => JSON.stringify(v)).join(', ')}`;
      const names = iss.values.filter((v): v is string => typeof v === 'string');
      const near = typeof iss.input === 'string' ? closestName(iss.input, names) : undefined;
      return near === undefined ? allowed : `${allowed}; did you mean ${JSON.stringify(near)}?`;
    }
    case 'unrecognized_keys': {
      const fields = fieldsOf(iss.inst);
      const lines = iss.keys.slice(0, MAX_UNKNOWN_FIELDS).map((key) => unknownFieldMessage(key, fields));
      const more = iss.keys.length - lines.length;
      return [...lines, ...(more > 0 ? [`and ${more} more unknown fields`] : [])].join('\n');
    }
    default:
      return undefined;
  }
};

export function toValidationErrors(base: string, error: z.ZodError): ValidationError[] {
  return error.issues.flatMap((issue) => {
    if (issue.code !== 'unrecognized_keys') {
      return [{ path: formatPath(base, issue.path), message: shorten(issue.message) }];
    }
    // errorMap's lines: one per key, then the count of the rest. Another message goes on the mapping as a whole.
    const lines = issue.message.split('\n');
    const named = Math.min(issue.keys.length, MAX_UNKNOWN_FIELDS);
    if (lines.length !== named + (issue.keys.length > named ? 1 : 0)) {
      return [{ path: formatPath(base, issue.path), message: shorten(issue.message) }];
    }
    return lines.map((line, i) => ({
      path: formatPath(base, i < named ? [...issue.path, issue.keys[i]!] : issue.path),
      message: shorten(line),
    }));
  });
}

/**
 * Options of a cross-field refinement that runs even when other fields failed, so that every error comes out in one
 * pass rather than one wave per fix (Zod skips refinements after any failure by default). It runs once the value is
 * a mapping and none of the fields it reads failed: the refinement must read no other field.
 */
export function whenParsed(...fields: string[]): { when: (payload: z.core.ParsePayload) => boolean } {
  return {
    when: ({ value, issues }) =>
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      !issues.some((issue) => issue.path !== undefined && fields.includes(String(issue.path[0]))),
  };
}

/** Schema messages may quote the value they refuse; a hostile one (tens of KB) is cut in the middle. */
function shorten(message: string, max = 300): string {
  return message.length <= max ? message : `${message.slice(0, max - 60)} ... ${message.slice(-55)}`;
}
