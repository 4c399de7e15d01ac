import { DISABLE_ANNOTATION, PAUSE_ANNOTATION, type RolloutKind } from '../wire';
import { metadataPrefix } from './rollout-spec';

// The pause and disable a rollout manifest asks for. Read leniently, from the raw annotations and spec.pause, so a
// manifest that fails validation still pauses or disables its running rollout: an operator's pause is never ignored.

export interface ManifestControls {
  paused: boolean;
  disabled: boolean;
}

/** Paused by its pause annotation or by spec.pause (the older way to say it); disabled by its disable annotation. */
export function manifestControls(
  kind: RolloutKind,
  annotations: Readonly<Record<string, string>>,
  specPause: unknown,
): ManifestControls {
  const prefix = metadataPrefix(kind);
  return {
    paused: annotations[`${prefix}${PAUSE_ANNOTATION}`] === 'true' || specPause === true,
    disabled: annotations[`${prefix}${DISABLE_ANNOTATION}`] === 'true',
  };
}
