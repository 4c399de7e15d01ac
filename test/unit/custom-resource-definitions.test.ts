import fs from 'node:fs';
import path from 'node:path';
import { customResourceDefinitions } from '../../model/custom-resource/definitions';
import { toStructuralSchema } from '../../model/custom-resource/structural-schema';
import { CRD_DIR, crdFiles } from '../../scripts/generate-crds';

// The chart's CustomResourceDefinitions are the manifest schemas': generated, committed, and in the structural form
// the apiserver requires (test/deploy/custom-resource-definitions.test.ts has the apiserver accept them).

describe('generated CustomResourceDefinitions', () => {
  test('the committed files are what scripts/generate-crds.ts writes today', () => {
    const expected = crdFiles();
    expect(fs.readdirSync(CRD_DIR).sort()).toEqual([...expected.keys()].sort());
    for (const [name, text] of expected) expect(fs.readFileSync(path.join(CRD_DIR, name), 'utf8')).toBe(text);
  });

  test('groups, kinds, plurals and printer columns are the operators', () => {
    const byName = new Map(customResourceDefinitions().map((d) => [d.metadata.name, d]));
    expect([...byName.keys()].sort()).toEqual([
      'deploymentpolicies.nodewright.nvidia.com',
      'deploymentpolicies.skyhook.nvidia.com',
      'nodewrights.nodewright.nvidia.com',
      'skyhooks.skyhook.nvidia.com',
    ]);
    const skyhook = byName.get('skyhooks.skyhook.nvidia.com')!;
    expect(skyhook.spec.names).toEqual({
      kind: 'Skyhook',
      listKind: 'SkyhookList',
      plural: 'skyhooks',
      singular: 'skyhook',
    });
    expect(skyhook.spec.scope).toBe('Cluster');
    const [v1alpha1] = skyhook.spec.versions;
    expect(v1alpha1!.name).toBe('v1alpha1');
    expect(v1alpha1!.subresources).toEqual({ status: {} });
    expect(v1alpha1!.additionalPrinterColumns!.map((c) => `${c.name}=${c.jsonPath}`)).toEqual([
      'Status=.status.status',
      'Priority=.spec.priority',
      'Age=.metadata.creationTimestamp',
      'Nodes In-Progress=.status.nodesInProgress',
      'Complete Nodes=.status.completeNodes',
      'Packages=.status.packageList',
      'Policy=.spec.deploymentPolicy',
    ]);
    const policy = byName.get('deploymentpolicies.skyhook.nvidia.com')!.spec.versions[0]!;
    expect(policy.subresources).toBeUndefined();
    expect(policy.schema.openAPIV3Schema.properties!.status).toBeUndefined();
  });

  test('the rollout spec keeps the operator defaults and the status its list-map conditions', () => {
    const root = customResourceDefinitions()[0]!.spec.versions[0]!.schema.openAPIV3Schema;
    const spec = root.properties!.spec!;
    expect(spec.properties!.priority).toEqual({ type: 'integer', default: 200, minimum: 1 });
    expect(spec.properties!.packages!.nullable).toBe(true);
    const conditions = root.properties!.status!.properties!.conditions!;
    expect(conditions['x-kubernetes-list-type']).toBe('map');
    expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
  });
});

describe('toStructuralSchema', () => {
  test('a nullish field becomes nullable, a null default is dropped and safe-integer bounds are none', () => {
    const out = toStructuralSchema({
      type: 'object',
      additionalProperties: false,
      properties: {
        n: {
          default: null,
          anyOf: [{ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { type: 'null' }],
        },
      },
    });
    expect(out).toEqual({ type: 'object', properties: { n: { type: 'integer', minimum: 1, nullable: true } } });
  });

  test('a map of anything keeps unknown fields; a map of strings is typed; a literal is an enum', () => {
    expect(toStructuralSchema({ type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} })).toEqual(
      {
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
      },
    );
    expect(toStructuralSchema({ type: 'object', additionalProperties: { type: 'string' } })).toEqual({
      type: 'object',
      additionalProperties: { type: 'string' },
    });
    expect(toStructuralSchema({ type: 'string', const: 'Skyhook' })).toEqual({ type: 'string', enum: ['Skyhook'] });
  });

  test('a date-time keeps its format, not the pattern zod gives it', () => {
    expect(toStructuralSchema({ type: 'string', format: 'date-time', pattern: '^(?:\\d{4})$' })).toEqual({
      type: 'string',
      format: 'date-time',
    });
  });

  test('what has no structural form is refused with its path, never dropped', () => {
    expect(() =>
      toStructuralSchema({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } }),
    ).toThrow('.a: anyOf other than one type or null has no structural form');
    expect(() => toStructuralSchema({ type: 'object', properties: { b: { not: {} } } })).toThrow(
      '.b: JSON Schema keyword not has no structural form',
    );
    expect(() => toStructuralSchema({ type: 'array', items: {} })).toThrow(
      '[]: a field without a type has no structural form',
    );
  });
});
