import type { ApiClient } from '../../client/http-client';
import { keelsonVersion } from '../../client/version';
import { EXIT } from './output';

// `keelson --version`: the CLI's version, then the API's (GET /v1/version) when it answers; when it does not, why,
// and still exit 0, as the CLI's own version is known.

export async function printVersions(api: () => ApiClient): Promise<number> {
  process.stdout.write(`client: ${keelsonVersion()}\n`);
  const client = api();
  try {
    const { body } = await client.request<{ version: string }>('GET', '/v1/version');
    process.stdout.write(`server: ${body.version} (${client.url})\n`);
  } catch (err) {
    process.stdout.write(`server: unknown (${err instanceof Error ? err.message : String(err)})\n`);
  }
  return EXIT.ok;
}
