import { hostname, userInfo } from 'node:os';

// Who runs the CLI, sent with a change as `onBehalfOf` (unverified; the actor is the API token's name).

/** Who steers: `user@host`, kept in the workflow history with the reason. */
export function actor(): string {
  let user = process.env.USER ?? '';
  try {
    user ||= userInfo().username;
  } catch {
    user ||= 'unknown';
  }
  return `${user}@${hostname()}`;
}
