// A small HTTP caller for API tests: JSON or text bodies, bearer token by default, the parsed answer back.

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // Response bodies are read field by field in assertions; their shapes are what docs/api.md documents.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: Record<string, any>;
}

export function caller(base: () => { url: string; token: string }) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const { url, token } = base();
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { 'content-type': contentType }),
        ...headers,
      },
      ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown = {};
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON (metrics): `text` has it
    }
    return { status: res.status, headers: res.headers, text, body: json as Answer['body'] };
  };
}
