import { decodeWriteOrder, encodeWriteOrder, writtenAfter, type NodeWriteOrder } from '../../model';

// The order of node-state writes (G1): [the node workflow's start time, its count of writes], the time first, so a
// workflow started afresh is above every write of the one before it, and within one workflow the count decides.

test('G1 within one node workflow, the higher count is the later write', () => {
  expect(writtenAfter([1000, 5], [1000, 4])).toBe(true);
  expect(writtenAfter([1000, 4], [1000, 5])).toBe(false);
});

test('G1 the same order is not after itself: an attempt of the write on the Node is not stale', () => {
  expect(writtenAfter([1000, 5], [1000, 5])).toBe(false);
});

test("G1 a node workflow started later is above every write of an earlier one, whatever the earlier one's count", () => {
  expect(writtenAfter([2000, 1], [1000, 99])).toBe(true);
  expect(writtenAfter([1000, 99], [2000, 1])).toBe(false);
});

test('G1 an order reads back as written; a missing or malformed one (an older Keelson, Skyhook, a hand edit) is none', () => {
  const order: NodeWriteOrder = [1796169220825, 12];
  expect(encodeWriteOrder(order)).toBe('[1796169220825,12]');
  expect(decodeWriteOrder(encodeWriteOrder(order))).toEqual(order);
  for (const bad of [undefined, '', 'x', '{}', '[1]', '[1,2,3]', '[-1,2]', '[1.5,2]', '["1",2]']) {
    expect(decodeWriteOrder(bad)).toBeNull();
  }
});
