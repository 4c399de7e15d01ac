import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { Readable } from 'node:stream';

// A fetch over node:https for an API whose certificate the system CAs do not vouch for (a private CA, a
// self-signed certificate) or that asks for a client certificate (mTLS): Node's built-in fetch takes neither a CA nor
// a client certificate. Answers are web Responses, so callers handle both transports alike.

/** The client's TLS files, from KEELSON_API_CA_FILE, KEELSON_API_CLIENT_CERT_FILE and KEELSON_API_CLIENT_KEY_FILE. */
export interface ClientTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

export type Fetch = (
  url: string,
  init: { method?: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<Response>;

/** Statuses whose answer has no body (a web Response refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export class ClientTlsError extends Error {
  override name = 'ClientTlsError';
}

/** Reads the client's TLS files; a setting naming a file that cannot be read is an error naming both. */
export function clientTlsFromEnv(env: Readonly<Record<string, string | undefined>>): ClientTls | undefined {
  const read = (setting: string): Buffer | undefined => {
    const file = env[setting];
    if (!file) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new ClientTlsError(
        `${setting}=${JSON.stringify(file)}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
  };
  const ca = read('KEELSON_API_CA_FILE');
  const cert = read('KEELSON_API_CLIENT_CERT_FILE');
  const key = read('KEELSON_API_CLIENT_KEY_FILE');
  if (!cert !== !key) {
    const missing = cert ? 'KEELSON_API_CLIENT_KEY_FILE' : 'KEELSON_API_CLIENT_CERT_FILE';
    throw new ClientTlsError(
      `${missing}="": must be set together with ${cert ? 'KEELSON_API_CLIENT_CERT_FILE' : 'KEELSON_API_CLIENT_KEY_FILE'} (a client certificate and its key)`,
    );
  }
  if (!ca && !cert) return undefined;
  return { ...(ca && { ca }), ...(cert && key && { cert, key }) };
}

/** A fetch that trusts `tls.ca` (on top of nothing else: the CA file replaces the system CAs) and presents its pair. */
export function tlsFetch(tls: ClientTls): Fetch {
  // An agent of its own: kept-alive connections are never shared with a client that trusts other CAs.
  const agent = new Agent({
    keepAlive: true,
    ...(tls.ca && { ca: tls.ca }),
    ...(tls.cert && tls.key && { cert: tls.cert, key: tls.key }),
  });
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const req = request(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers,
          agent,
          ...(init.signal && { signal: init.signal }),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of [value ?? []].flat()) headers.append(name, v);
          }
          const body = NO_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          if (!body) res.resume();
          resolve(new Response(body, { status, headers }));
        },
      );
      // As fetch does: a failure to connect rejects with the cause (its code) attached.
      req.on('error', (err) => reject(Object.assign(new TypeError('fetch failed'), { cause: err })));
      req.end(init.body);
    });
}
