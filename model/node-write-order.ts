import { z } from 'zod';

// The order of a node-state write (G1), put on the Node beside the state it writes: the node workflow's start time
// (recorded in its history, so the same on replay; a node workflow started afresh starts later) and its count of
// writes (carried across continue-as-new). A write whose order is below the one on the Node is a stale copy: a
// local write run again on replay after a later one landed, or an attempt of a stalled worker.

export const NodeWriteOrderSchema = z.tuple([z.int().min(0), z.int().min(0)]);
/** [the node workflow's start time in ms, its count of writes]: compared as a pair, the time first. */
export type NodeWriteOrder = z.infer<typeof NodeWriteOrderSchema>;

export function encodeWriteOrder(order: NodeWriteOrder): string {
  return JSON.stringify(order);
}

/** The order an annotation holds; null when there is none or it is malformed (a node written before orders). */
export function decodeWriteOrder(annotation: string | undefined): NodeWriteOrder | null {
  if (annotation === undefined) return null;
  try {
    const parsed = NodeWriteOrderSchema.safeParse(JSON.parse(annotation));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Whether the write ordered `a` came after the one ordered `b`. */
export function writtenAfter(a: NodeWriteOrder, b: NodeWriteOrder): boolean {
  return a[0] !== b[0] ? a[0] > b[0] : a[1] > b[1];
}
