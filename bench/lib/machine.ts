import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

// What every bench result records about where it ran.

export const VERSIONS = { kubernetes: 'v1.37.2', temporalCli: '1.9.1', kwok: 'v0.8.0', etcd: 'v3.6.16' };

export function machine() {
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    node: process.version,
  };
}

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

export const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');

/** A Markdown table from a header row and data rows. */
export function markdownTable(rows: string[][]): string {
  return [
    `| ${rows[0]!.join(' | ')} |`,
    `|${rows[0]!.map(() => '---').join('|')}|`,
    ...rows.slice(1).map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** VmRSS of a running process in KiB; 0 when it has gone. */
export function processRssKb(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The median of the finite values (the mean of the middle two for an even count); NaN when there are none. */
export function median(values: number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** A table cell for repeated runs: the median, and the range `(min–max)` when there is more than one value. */
export function cell(values: number[], digits = 0): string {
  const v = values.filter(Number.isFinite);
  if (v.length <= 1) return fmt(median(v), digits);
  return `${fmt(median(v), digits)} (${fmt(Math.min(...v), digits)}–${fmt(Math.max(...v), digits)})`;
}

/** `--repeat`: how many runs per point (a positive whole number). */
export function repeatArg(fallback: number): number {
  const n = Number(arg('repeat', String(fallback)));
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--repeat takes a positive whole number, got ${arg('repeat', '')}`);
  return n;
}
