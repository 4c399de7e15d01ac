import { globMatches, isGlob } from './glob';
import type { Interrupt } from './manifests/package';

// Interrupts (§3.5): which a package needs, and the ONE merged interrupt a node runs for all of them.

type InterruptSource = { interrupt?: Interrupt; configInterrupts?: Readonly<Record<string, Interrupt>> };

/**
 * The interrupts a package's current run needs. In a config cycle (changed configMap keys given) only the
 * configInterrupts whose pattern matches a changed key count, and the package's own interrupt is ignored (§3.6).
 */
export function packageInterrupts(pkg: InterruptSource, changedConfigKeys: readonly string[] = []): Interrupt[] {
  if (changedConfigKeys.length === 0) return pkg.interrupt ? [pkg.interrupt] : [];
  return Object.entries(pkg.configInterrupts ?? {})
    .filter(([pattern]) =>
      changedConfigKeys.some((key) => (isGlob(pattern) ? globMatches(pattern, key) : pattern === key)),
    )
    .map(([, interrupt]) => interrupt);
}

/** A package any of whose stages may end in an interrupt (its own, or a configMap change's). */
export function mayInterrupt(pkg: InterruptSource): boolean {
  return pkg.interrupt !== undefined || Object.keys(pkg.configInterrupts ?? {}).length > 0;
}

const PRIORITY: Record<Interrupt['type'], number> = { reboot: 0, restartAllServices: 1, service: 2, noop: 3 };

export interface MergedInterrupt {
  interrupt: Interrupt;
  /** The alphabetically first package holding the winning interrupt type: it runs the interrupt Job. */
  owner: string;
  /** Every package with an interrupt; all but the owner are `interrupt/skipped` until the interrupt completes. */
  packages: string[];
}

/** reboot > restartAllServices > the sorted union of services > noop; undefined when no package interrupts. */
export function mergeInterrupts(
  byPackage: Readonly<Record<string, readonly Interrupt[]>>,
): MergedInterrupt | undefined {
  const packages = Object.keys(byPackage)
    .filter((p) => byPackage[p]!.length > 0)
    .sort();
  const all = packages.flatMap((p) => byPackage[p]!.map((interrupt) => ({ p, interrupt })));
  if (all.length === 0) return undefined;
  const best = Math.min(...all.map(({ interrupt }) => PRIORITY[interrupt.type]));
  const winners = all.filter(({ interrupt }) => PRIORITY[interrupt.type] === best);
  const type = winners[0]!.interrupt.type;
  const interrupt: Interrupt =
    type === 'service'
      ? { type, services: [...new Set(winners.flatMap(({ interrupt: i }) => i.services ?? []))].sort() }
      : { type };
  return { interrupt, owner: winners[0]!.p, packages };
}

const AGENT_TYPE: Record<Interrupt['type'], string> = {
  reboot: 'node_restart',
  service: 'service_restart',
  restartAllServices: 'restart_all_services',
  noop: 'no_op',
};

/** The base64 JSON argument the Skyhook agent's `interrupt` mode takes (§3.2). */
export function agentInterruptArgument(interrupt: Interrupt): string {
  const payload =
    interrupt.type === 'service'
      ? { type: AGENT_TYPE.service, services: interrupt.services ?? [] }
      : { type: AGENT_TYPE[interrupt.type] };
  return base64(new TextEncoder().encode(JSON.stringify(payload)));
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// Buffer is a Node built-in, unavailable in the workflow sandbox; this is the standard padded encoding.
function base64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += ALPHABET[(n >> 18) & 63]! + ALPHABET[(n >> 12) & 63]!;
    out += i + 1 < bytes.length ? ALPHABET[(n >> 6) & 63]! : '=';
    out += i + 2 < bytes.length ? ALPHABET[n & 63]! : '=';
  }
  return out;
}
