// Turns the JSON Schema that zod derives from a manifest schema into a Kubernetes structural schema (the OpenAPI v3
// subset a CustomResourceDefinition accepts): every field typed, no anyOf for nullables, no `additionalProperties:
// false` (the apiserver prunes and, with kubectl's strict field validation, refuses unknown fields instead).

export type JsonSchema = { [keyword: string]: unknown };

/** The Kubernetes JSONSchemaProps fields a generated schema may hold. */
export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema;
  items?: StructuralSchema;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

// Keywords copied as they are; any keyword not handled below is an error, so a new zod construct is never dropped
// silently from a CRD.
const COPIED = ['type', 'description', 'required', 'enum', 'format', 'pattern', 'minLength', 'maxLength'] as const;
const IGNORED = new Set(['$schema', 'propertyNames', 'additionalProperties', 'properties', 'items', 'anyOf']);

export function toStructuralSchema(schema: JsonSchema, path = ''): StructuralSchema {
  const nullable = nullableBranch(schema, path);
  if (nullable) return { ...toStructuralSchema(nullable, path), nullable: true, ...withDefault(schema) };
  const out: StructuralSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    // x-kubernetes-* extensions come from a schema's .meta(), written for the CRD.
    if ((COPIED as readonly string[]).includes(keyword) || keyword.startsWith('x-kubernetes-')) {
      Object.assign(out, { [keyword]: value });
    } else if (keyword === 'const') out.enum = [value];
    else if (keyword === 'minimum' || keyword === 'maximum') {
      // z.int() bounds every integer by the safe-integer range: no bound for Kubernetes' int64.
      if (Math.abs(value as number) !== Number.MAX_SAFE_INTEGER) out[keyword] = value as number;
    } else if (keyword === 'default') Object.assign(out, withDefault(schema));
    else if (!IGNORED.has(keyword))
      throw new Error(`${path || '<root>'}: JSON Schema keyword ${keyword} has no structural form`);
  }
  // A date-time is checked by its format; zod's pattern for it uses regex features the apiserver's RE2 refuses.
  if (out.format === 'date-time') delete out.pattern;
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties as Record<string, JsonSchema>).map(([name, s]) => [
        name,
        toStructuralSchema(s, `${path}.${name}`),
      ]),
    );
  }
  const extra = schema.additionalProperties;
  if (typeof extra === 'object' && extra !== null && Object.keys(extra).length > 0) {
    out.additionalProperties = toStructuralSchema(extra as JsonSchema, `${path}.*`);
  } else if (extra === true || (typeof extra === 'object' && extra !== null)) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (schema.items) out.items = toStructuralSchema(schema.items as JsonSchema, `${path}[]`);
  if (out.type === undefined && !out['x-kubernetes-preserve-unknown-fields']) {
    throw new Error(`${path || '<root>'}: a field without a type has no structural form`);
  }
  return out;
}

/** The non-null branch of `anyOf: [X, {type: null}]` (zod's nullish), or undefined. */
function nullableBranch(schema: JsonSchema, path: string): JsonSchema | undefined {
  const anyOf = schema.anyOf as JsonSchema[] | undefined;
  if (!anyOf) return undefined;
  const others = anyOf.filter((branch) => branch.type !== 'null');
  if (others.length !== 1 || anyOf.length !== 2) {
    throw new Error(`${path || '<root>'}: anyOf other than one type or null has no structural form`);
  }
  return others[0];
}

// A null default is the same as none for a nullable field, and the apiserver refuses it on a non-nullable one.
const withDefault = (schema: JsonSchema) => (schema.default == null ? {} : { default: schema.default });
