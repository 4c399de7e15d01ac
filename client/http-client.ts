// A client of Keelson's HTTP API (the CLI uses it): KEELSON_API_URL and KEELSON_API_TOKEN, JSON answers, and a
// typed error for every answer that is not a success.

export const DEFAULT_API_URL = 'http://127.0.0.1:7480';

export interface ApiErrorBody {
  error: string;
  message: string;
  errors?: { path: string; message: string }[];
}

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    /** HTTP status; 0 when the API could not be reached. */
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.message);
  }
}

export class ApiClient {
  constructor(
    readonly url: string,
    private readonly token: string | undefined,
    private readonly timeoutMs = 30_000,
  ) {}

  static fromEnv(env: Readonly<Record<string, string | undefined>> = process.env): ApiClient {
    return new ApiClient(
      (env.KEELSON_API_URL || DEFAULT_API_URL).replace(/\/+$/, ''),
      env.KEELSON_API_TOKEN || undefined,
    );
  }

  async request<T>(
    method: string,
    path: string,
    body?: { json: unknown } | { yaml: string },
  ): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body && 'json' in body) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body.json);
    } else if (body) {
      headers['content-type'] = 'application/yaml';
      payload = body.yaml;
    }
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        headers,
        ...(payload !== undefined && { body: payload }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const cause =
        (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : String(err));
      throw new ApiError(0, {
        error: 'unreachable',
        message: `cannot reach the Keelson API at ${this.url} (${cause})`,
      });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const b = parsed as Partial<ApiErrorBody> | undefined;
      throw new ApiError(res.status, {
        error: b?.error ?? `http_${res.status}`,
        message: b?.message ?? `${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`,
        ...(b?.errors && { errors: b.errors }),
      });
    }
    return { status: res.status, body: parsed as T };
  }
}
