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

  /**
   * A GET whose answer is text read as it comes (a followed log): the headers within the timeout, the body for as
   * long as the API sends it. Errors as `request`'s.
   */
  async stream(path: string): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/plain, application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, { headers, signal: abort.signal });
    } catch (err) {
      throw this.unreachable(err);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) throw errorOf(res.status, await res.text(), 'GET', path);
    return res;
  }

  private unreachable(err: unknown): ApiError {
    const cause =
      (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : String(err));
    return new ApiError(0, { error: 'unreachable', message: `cannot reach the Keelson API at ${this.url} (${cause})` });
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
      throw this.unreachable(err);
    }
    const text = await res.text();
    if (!res.ok) throw errorOf(res.status, text, method, path);
    return { status: res.status, body: parseJson(text) as T };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The typed error of an answer that is not a success: the API's error body, or the status and the text's start. */
function errorOf(status: number, text: string, method: string, path: string): ApiError {
  const b = parseJson(text) as Partial<ApiErrorBody> | undefined;
  return new ApiError(status, {
    error: b?.error ?? `http_${status}`,
    message: b?.message ?? `${method} ${path}: HTTP ${status} ${text.slice(0, 200)}`,
    ...(b?.errors && { errors: b.errors }),
  });
}
