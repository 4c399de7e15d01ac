import { z } from 'zod';
import { WorkerConfigSchema } from '../workers/config';
import { loadSettings, TemporalSettingsSchema } from '../workers/temporal-settings';

// Settings of anything that talks to Temporal on Keelson's behalf (the API, the TS client): the Temporal connection
// (workers/temporal-settings.ts), the worker's task queue and cluster, and the Temporal UI address.

export const ClientSettingsSchema = z.object({
  ...TemporalSettingsSchema.shape,
  KEELSON_TASK_QUEUE: WorkerConfigSchema.shape.KEELSON_TASK_QUEUE,
  KEELSON_CLUSTER: WorkerConfigSchema.shape.KEELSON_CLUSTER,
  TEMPORAL_UI_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
    .default('http://127.0.0.1:8233')
    .transform((u) => u.replace(/\/+$/, ''))
    .describe('Temporal Web UI, for links in responses'),
});
export type ClientSettings = z.infer<typeof ClientSettingsSchema>;

export function loadClientSettings(env: Readonly<Record<string, string | undefined>> = process.env): ClientSettings {
  return loadSettings(ClientSettingsSchema, 'client', env);
}
