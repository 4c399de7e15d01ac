import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApi, type ApiOptions } from '../api/server';

// The API level of the harness: the real API (api/server.ts) of a Keelson under test, on a free port of 127.0.0.1.

export interface TestApi {
  app: FastifyInstance;
  url: string;
}

export async function serveTestApi(options: ApiOptions): Promise<TestApi> {
  const app = await buildApi(options);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}
