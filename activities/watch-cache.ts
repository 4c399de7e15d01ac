import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { classifyKubeError } from './kube-errors';

// A small informer: list, then watch from the list's resourceVersion, keeping the matching objects in memory.
// It reconnects when the server ends the watch (expiry, network) and re-lists on 410 Gone (history compacted),
// calling onChange after every change so a waiter can re-evaluate at once.

export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface WatchCacheOptions<T> {
  kc: KubeConfig;
  /** The collection's API path, e.g. `/apis/batch/v1/namespaces/ns/jobs` or `/api/v1/pods`. */
  path: string;
  list: (query: { fieldSelector?: string; labelSelector?: string }) => Promise<{
    items: T[];
    metadata?: { resourceVersion?: string };
  }>;
  fieldSelector?: string;
  labelSelector?: string;
  /** After every change: with the object that changed, or with none after a (re-)list. */
  onChange: (changed?: T) => void;
  /** Test hook: watch from this resourceVersion first instead of listing (an old one provokes 410 Gone). */
  startFrom?: string;
  /** Server-side watch timeout: the watch ends and is resumed this often. */
  watchSeconds?: number;
  /** A secondary key (e.g. the owning Job's UID) to look objects up by with `indexed`. */
  indexBy?: (obj: T) => string | undefined;
}

export class WatchCache<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  private readonly index = new Map<string, Map<string, T>>();
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private stopped = false;
  private starting: Promise<void> | undefined;
  private failures = 0;
  /** How many times the cache listed (tests: a 410 shows as a re-list). */
  lists = 0;
  /** The last error seen while listing or watching; waits go on, retrying. */
  lastError: Error | undefined;

  constructor(private readonly options: WatchCacheOptions<T>) {}

  items(): T[] {
    return [...this.objects.values()];
  }

  get(namespace: string, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }

  /** The objects whose `indexBy` key is `value`. */
  indexed(value: string): T[] {
    return [...(this.index.get(value)?.values() ?? [])];
  }

  /**
   * Lists once (throwing if that fails), then keeps watching in the background until stop(). Called again, it waits
   * for the same start, or tries again after a failed one.
   */
  start(): Promise<void> {
    this.starting ??= (async () => {
      if (this.options.startFrom !== undefined) this.resourceVersion = this.options.startFrom;
      else await this.relist();
      void this.watchLoop();
    })().catch((err: unknown) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  private async relist(): Promise<void> {
    const { fieldSelector, labelSelector } = this.options;
    let result;
    try {
      result = await this.options.list({ fieldSelector, labelSelector });
    } catch (err) {
      throw classifyKubeError(err, 'list', this.options.path);
    }
    this.lists++;
    this.objects.clear();
    this.index.clear();
    for (const item of result.items) this.put(item);
    this.resourceVersion = result.metadata?.resourceVersion;
    this.options.onChange();
  }

  private async watchLoop(): Promise<void> {
    while (!this.stopped) {
      const outcome = await this.watchOnce();
      if (this.stopped) return;
      try {
        if (outcome === 'gone') await this.relist();
        this.failures = outcome === 'error' ? this.failures + 1 : 0;
      } catch (err) {
        this.lastError = err as Error;
        this.failures++;
      }
      if (this.failures > 0) await delay(Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6)));
    }
  }

  private put(obj: T): void {
    const k = key(obj);
    this.remove(this.objects.get(k));
    this.objects.set(k, obj);
    const value = this.options.indexBy?.(obj);
    if (value === undefined) return;
    const bucket = this.index.get(value) ?? new Map<string, T>();
    bucket.set(k, obj);
    this.index.set(value, bucket);
  }

  private remove(obj: T | undefined): void {
    if (!obj) return;
    const k = key(obj);
    this.objects.delete(k);
    const value = this.options.indexBy?.(obj);
    const bucket = value === undefined ? undefined : this.index.get(value);
    bucket?.delete(k);
    if (bucket?.size === 0) this.index.delete(value!);
  }

  /** One watch connection: resolves when it ends, saying whether to resume, re-list, or back off. */
  private watchOnce(): Promise<'ended' | 'gone' | 'error'> {
    return new Promise((resolve) => {
      let gone = false;
      const query: Record<string, string | number | boolean | undefined> = {
        allowWatchBookmarks: true,
        resourceVersion: this.resourceVersion,
        fieldSelector: this.options.fieldSelector,
        labelSelector: this.options.labelSelector,
        timeoutSeconds: this.options.watchSeconds ?? 240,
      };
      const done = (err: unknown) => {
        this.abort = undefined;
        if (gone) return resolve('gone');
        if (err && !this.stopped && !isAbort(err)) {
          if (isGoneError(err)) return resolve('gone');
          this.lastError = err instanceof Error ? err : new Error(String(err));
          return resolve('error');
        }
        resolve('ended');
      };
      new Watch(this.options.kc)
        .watch(
          this.options.path,
          query,
          (type: string, obj: T & { code?: number }) => {
            if (type === 'ERROR') {
              if (obj.code === 410) gone = true;
              else this.lastError = new Error(`watch ${this.options.path}: ${JSON.stringify(obj)}`);
              return;
            }
            const rv = obj.metadata?.resourceVersion;
            if (rv) this.resourceVersion = rv;
            if (type === 'BOOKMARK') return;
            if (type === 'DELETED') this.remove(obj);
            else this.put(obj);
            this.options.onChange(obj);
          },
          done,
        )
        .then((controller) => {
          this.abort = controller;
          if (this.stopped) controller.abort();
        }, done);
    });
  }
}

function key(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || /aborted/i.test(err.message));
}

function isGoneError(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: number; message?: string };
  return e.statusCode === 410 || e.code === 410 || /\b410\b/.test(e.message ?? '');
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A latch a wait loop sleeps on: woken early by a cache change, or after `ms`. */
export class ChangeSignal {
  private wake: (() => void) | undefined;
  private pending = false;

  notify = (): void => {
    this.pending = true;
    this.wake?.();
  };

  wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this; // eslint-disable-line @typescript-eslint/no-this-alias
      function done() {
        clearTimeout(timer);
        self.wake = undefined;
        self.pending = false;
        resolve();
      }
      this.wake = done;
    });
  }
}
