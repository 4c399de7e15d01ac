import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { KeyPair } from './certificates';
import { pem } from './certificates';

// A TLS front for the plain Temporal dev server, as a TLS-terminating proxy or a hosted Temporal is: it asks every
// connection for a client certificate signed by `clientCa`, checks each call's API key, and forwards the call to the
// server. It records who made each call, so a test can tell which credentials a process used, and it can drop its
// connections, so clients connect again with what they hold then.

export interface ProxiedCall {
  /** CN of the client certificate the connection presented. */
  subject: string;
  /** The API key of the call (its `authorization: Bearer ...` header), or '' without one. */
  apiKey: string;
  path: string;
  /** Whether the call was let through (subject and key accepted). */
  passed: boolean;
}

export interface GrpcTlsProxy {
  address: string;
  calls: ProxiedCall[];
  /** Who is let through: only these subjects and API keys. */
  accept: { subjects: string[]; apiKeys: string[] };
  /** Ends every open connection (its clients must connect again). */
  dropConnections(): void;
  /** While true, new connections are closed before their TLS handshake (a front that is down). */
  refuseConnections: boolean;
  close(): Promise<void>;
}

// Headers that belong to one HTTP/2 hop, never forwarded.
const HOP = new Set([':method', ':path', ':scheme', ':authority', ':status', 'connection', 'host']);
const forwarded = (headers: http2.IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP.has(name)));

const GRPC_UNAUTHENTICATED = '16';
const GRPC_UNAVAILABLE = '14';

export async function grpcTlsProxy(target: string, server: KeyPair, clientCa: KeyPair): Promise<GrpcTlsProxy> {
  // The server ends its connections now and then (their maximum age): the next call opens another.
  let upstream: http2.ClientHttp2Session | undefined;
  const toServer = () => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      upstream = http2.connect(`http://${target}`);
      upstream.on('error', () => undefined);
      upstream.on('goaway', () => (upstream = undefined));
    }
    return upstream;
  };
  const front = http2.createSecureServer({
    cert: pem(server.cert),
    key: pem(server.key),
    ca: pem(clientCa.cert),
    requestCert: true,
    rejectUnauthorized: true,
  });
  front.on('connection', (socket: Socket) => {
    if (proxy.refuseConnections) socket.destroy();
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  front.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined);
  });
  const proxy: GrpcTlsProxy = {
    address: '',
    calls: [],
    accept: { subjects: [], apiKeys: [] },
    refuseConnections: false,
    dropConnections: () => sessions.forEach((s) => s.destroy()),
    close: async () => {
      proxy.dropConnections();
      upstream?.close();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    },
  };
  front.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const subject = String((stream.session?.socket as TLSSocket | undefined)?.getPeerCertificate().subject?.CN ?? '');
    const apiKey = String(headers.authorization ?? '').replace(/^Bearer /i, '');
    const path = String(headers[':path']);
    const passed = proxy.accept.subjects.includes(subject) && proxy.accept.apiKeys.includes(apiKey);
    proxy.calls.push({ subject, apiKey, path, passed });
    const fail = (status: string, message: string) =>
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': status, 'grpc-message': message },
        { endStream: true },
      );
    if (!passed) {
      fail(
        GRPC_UNAUTHENTICATED,
        `refused: subject ${subject || '(none)'}, API key ${apiKey ? 'not accepted' : 'absent'}`,
      );
      return;
    }
    let call: http2.ClientHttp2Stream;
    try {
      call = toServer().request({ ':method': 'POST', ':path': path, ...forwarded(headers) });
    } catch (err) {
      upstream = undefined;
      fail(GRPC_UNAVAILABLE, `the server connection failed: ${String(err)}`);
      return;
    }
    call.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('close', () => call.close());
    stream.pipe(call);
    let trailers: http2.IncomingHttpHeaders = {};
    call.on('trailers', (t) => (trailers = t));
    call.on('response', (response) => {
      const status = { ':status': response[':status'] ?? 200, ...forwarded(response) };
      // A trailers-only answer (the status in the headers) ends there; any other ends with the server's trailers.
      if ('grpc-status' in response) {
        stream.respond(status, { endStream: true });
        return;
      }
      stream.respond(status, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(forwarded(trailers)));
      call.pipe(stream);
    });
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  proxy.address = `127.0.0.1:${(front.address() as AddressInfo).port}`;
  return proxy;
}
