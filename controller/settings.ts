import { z } from 'zod';
import { loadSettings } from '../workers/temporal-settings';
import { ClientSettingsSchema } from '../client/settings';

// The controller's settings: the client's Temporal settings, which resources it handles, and how often it refreshes
// their status. A bad value stops start-up with a message naming it.

export const ControllerSettingsSchema = ClientSettingsSchema.extend({
  KEELSON_CONTROLLER_SELECTOR: z
    .string()
    .regex(/^[A-Za-z0-9./_!=,()\s-]*$/, 'must be a Kubernetes label selector (e.g. team=gpu,tier!=canary)')
    .optional()
    .describe('label selector of the Skyhook and NodeWright resources this controller handles (unset: all)'),
  KEELSON_CONTROLLER_RESYNC_SECONDS: z.coerce
    .number()
    .int('must be a whole number from 1 to 3600')
    .min(1, 'must be a whole number from 1 to 3600')
    .max(3600, 'must be a whole number from 1 to 3600')
    .default(10)
    .describe("how often each resource's .status is refreshed from its rollout"),
});
export type ControllerSettings = z.infer<typeof ControllerSettingsSchema>;

export const loadControllerSettings = (env: Readonly<Record<string, string | undefined>> = process.env) =>
  loadSettings(ControllerSettingsSchema, 'controller', env);
