import { NativeConnection, type Worker } from '@temporalio/worker';
import { sameCertificates, type TemporalCredentials, type TemporalCredentialVersion } from './temporal-credentials';

// Keeps the worker's native Temporal connection on the credentials in use. The connection fixes its TLS when it
// connects, so new certificates mean a new connection that the worker switches to (Worker.connection: the polls and
// the completions of tasks already polled go on through the new one); a new API key alone is set in place. A new
// connection that fails or hangs is tried again with growing pauses until it works or the credentials change again;
// meanwhile the worker stays on the connection it has, and says so. One attempt at a time, never after close().

const CONNECT_TIMEOUT_MS = 30_000;
const RETRY_MS = { first: 1_000, max: 60_000 };

/** Connects, or fails after the timeout; a connection that arrives late is closed. */
async function connectWithin(credentials: TemporalCredentials, ms: number): Promise<NativeConnection> {
  const connecting = NativeConnection.connect(credentials.nativeOptions());
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no connection within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([connecting, timeout]);
  } catch (err) {
    void connecting.then((late) => late.close()).catch(() => undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export class NativeConnectionFollower {
  /** The version the worker's connection was made (or last given its API key) with. */
  private held: TemporalCredentialVersion;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private pauseMs = RETRY_MS.first;

  constructor(
    private readonly worker: Worker,
    private readonly credentials: TemporalCredentials,
    private readonly log: (line: string) => void,
  ) {
    this.held = credentials.version;
    credentials.onChange(() => {
      this.follow();
      return Promise.resolve();
    });
  }

  /** Brings the connection to the credentials in use, in the background; calls while one runs merge into one more. */
  follow(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.retry);
    this.running = this.sync().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.follow();
      }
    });
  }

  /** Stops following; waits for an attempt in flight, whose connection is closed if it came too late. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.running;
  }

  private async sync(): Promise<void> {
    const want = this.credentials.version;
    try {
      if (!sameCertificates(want, this.held)) await this.reconnect(want);
      else if (want.apiKey !== this.held.apiKey) {
        await this.worker.connection!.setApiKey(want.apiKey ?? '');
        this.held = want;
        this.log('the worker now calls Temporal with the new API key');
      }
      this.pauseMs = RETRY_MS.first;
    } catch (err) {
      if (this.closed) return;
      this.log(
        `the worker stays on its Temporal connection for now: a new one with the new credentials failed ` +
          `(${err instanceof Error ? err.message : String(err)}); trying again in ${this.pauseMs / 1000} s`,
      );
      this.retry = setTimeout(() => this.follow(), this.pauseMs);
      this.retry.unref();
      this.pauseMs = Math.min(this.pauseMs * 2, RETRY_MS.max);
    }
  }

  private async reconnect(want: TemporalCredentialVersion): Promise<void> {
    const next = await connectWithin(this.credentials, CONNECT_TIMEOUT_MS);
    if (this.closed) {
      await next.close();
      return;
    }
    const previous = this.worker.connection!;
    this.worker.connection = next;
    this.held = want;
    // What polls and completions the old connection carried now go through the new one.
    await previous
      .close()
      .catch((err: unknown) => this.log(`closing the replaced Temporal connection: ${String(err)}`));
    this.log('the worker now polls Temporal on a connection with the new certificates');
  }
}
