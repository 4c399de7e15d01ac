// The API's access log: one JSON object a request, written by the caller of buildApi (main.ts: a line on stdout).

export interface AccessLogEntry {
  time: string;
  method: string;
  /** The route pattern (`/v1/rollouts/:name`), or `unmatched`. */
  route: string;
  status: number;
  /** The name of the token presented; null without a valid one. */
  actor: string | null;
  /** The rollout the request is about, when it names one. */
  rollout?: string;
  node?: string;
  /** The nodes a request over several nodes (`node ignore|unignore`) acted on. */
  nodes?: string[];
  durationMs: number;
}

export type AccessLog = (entry: AccessLogEntry) => void;

/** Writes each entry as one line of JSON. */
export function jsonLines(write: (line: string) => void): AccessLog {
  return (entry) => write(`${JSON.stringify(entry)}\n`);
}
