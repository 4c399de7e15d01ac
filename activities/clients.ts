import {
  BatchV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  VersionApi,
  type KubeConfig,
} from '@kubernetes/client-node';

/** The typed API clients the activities share, made once per worker. */
export function makeClients(kc: KubeConfig) {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    version: kc.makeApiClient(VersionApi),
  };
}
export type Clients = ReturnType<typeof makeClients>;

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
export const applyPatch = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
export const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/** A JSON Pointer segment (RFC 6901): `~` and `/` escaped, as annotation keys need. */
export function pointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
