import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { customResourceDefinitions } from '../../model/custom-resource/definitions';
import { CRD_DIR } from '../../scripts/generate-crds';
import { toolPaths } from './paths';

// Custom-resource mode on the local stack: applies the chart's CustomResourceDefinitions (the files
// customResources.enabled installs) with kubectl, server-side as a GitOps tool would, and waits until each is served.

export function installCustomResourceDefinitions(kubeconfig: string): void {
  const kubectl = path.join(toolPaths().kubeBin, 'kubectl');
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  execFileSync(kubectl, ['apply', '--server-side', '--force-conflicts', '-f', CRD_DIR], { env, stdio: 'pipe' });
  const names = customResourceDefinitions().map((crd) => `crd/${crd.metadata.name}`);
  execFileSync(kubectl, ['wait', '--for=condition=Established', '--timeout=60s', ...names], { env, stdio: 'pipe' });
}
