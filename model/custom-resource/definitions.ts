import { z } from 'zod';
import { DeploymentPolicySpecSchema } from '../manifests/deployment-policy';
import { SkyhookSpecSchema } from '../manifests/skyhook';
import { POLICY_API_VERSIONS, POLICY_KIND, RESOURCE_PLURALS, ROLLOUT_KINDS } from '../wire';
import { RolloutResourceStatusSchema } from './status';
import { toStructuralSchema, type JsonSchema, type StructuralSchema } from './structural-schema';

// Keelson's CustomResourceDefinitions for Skyhook, NodeWright and DeploymentPolicy: the groups, versions, names,
// printer columns and status subresource of the operators' own, the schemas generated from Keelson's manifest schemas
// so the apiserver and `keelson validate` agree on the fields.

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date';
  jsonPath: string;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string };
    scope: 'Cluster';
    versions: {
      name: string;
      served: true;
      storage: true;
      schema: { openAPIV3Schema: StructuralSchema };
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns?: PrinterColumn[];
    }[];
  };
}

/** Skyhook's printer columns, so `kubectl get skyhooks` prints what it printed under the operator. */
const ROLLOUT_COLUMNS: PrinterColumn[] = [
  { name: 'Status', type: 'string', jsonPath: '.status.status' },
  { name: 'Priority', type: 'integer', jsonPath: '.spec.priority' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Nodes In-Progress', type: 'integer', jsonPath: '.status.nodesInProgress' },
  { name: 'Complete Nodes', type: 'string', jsonPath: '.status.completeNodes' },
  { name: 'Packages', type: 'string', jsonPath: '.status.packageList' },
  { name: 'Policy', type: 'string', jsonPath: '.spec.deploymentPolicy' },
];

const structural = (schema: z.ZodType) =>
  toStructuralSchema(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema);

function definition(
  apiVersion: string,
  kind: keyof typeof RESOURCE_PLURALS,
  spec: z.ZodType,
  status?: z.ZodType,
): CustomResourceDefinition {
  const [group, version] = apiVersion.split('/') as [string, string];
  const plural = RESOURCE_PLURALS[kind];
  const properties: Record<string, StructuralSchema> = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: structural(spec),
  };
  if (status) properties.status = structural(status);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Cluster',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties } },
          ...(status ? { subresources: { status: {} }, additionalPrinterColumns: ROLLOUT_COLUMNS } : {}),
        },
      ],
    },
  };
}

/** Every definition custom-resource mode installs: the two rollout kinds, and DeploymentPolicy in both groups. */
export function customResourceDefinitions(): CustomResourceDefinition[] {
  return [
    definition(ROLLOUT_KINDS.Skyhook, 'Skyhook', SkyhookSpecSchema, RolloutResourceStatusSchema),
    definition(ROLLOUT_KINDS.NodeWright, 'NodeWright', SkyhookSpecSchema, RolloutResourceStatusSchema),
    ...POLICY_API_VERSIONS.map((apiVersion) => definition(apiVersion, POLICY_KIND, DeploymentPolicySpecSchema)),
  ];
}
