import { needsNodeList, selectNodes, type RolloutNodes } from '../../model/node-selection';

// `node rerun` and `node reset` on several nodes: names, `*` patterns against the rollout's nodes, --all-erroring.

const listed: RolloutNodes = [
  { name: 'gpu-1', status: 'complete' },
  { name: 'gpu-2', status: 'erroring' },
  { name: 'cpu-1', status: 'erroring' },
  { name: 'cpu-2', status: 'in_progress' },
];

test('names are taken as given, each once, in order; they need no node list', () => {
  const request = { args: ['n2', 'n1', 'n2'], allErroring: false };
  expect(needsNodeList(request)).toBe(false);
  expect(selectNodes(request, 'r', [])).toEqual({ nodes: ['n2', 'n1'], errors: [] });
});

test("a pattern selects the rollout's nodes it matches, in list order", () => {
  const request = { args: ['gpu-*', 'cpu-2'], allErroring: false };
  expect(needsNodeList(request)).toBe(true);
  expect(selectNodes(request, 'r', listed)).toEqual({ nodes: ['gpu-1', 'gpu-2', 'cpu-2'], errors: [] });
});

test('--all-erroring adds the erroring nodes, after the names given and without repeating them', () => {
  const request = { args: ['cpu-1', 'gpu-1'], allErroring: true };
  expect(needsNodeList(request)).toBe(true);
  expect(selectNodes(request, 'r', listed)).toEqual({ nodes: ['cpu-1', 'gpu-1', 'gpu-2'], errors: [] });
  expect(selectNodes({ args: [], allErroring: true }, 'r', [listed[0]!])).toEqual({ nodes: [], errors: [] });
});

test('a pattern matching nothing, or a request naming nothing, is an error that says so', () => {
  expect(selectNodes({ args: ['tpu-*', 'gpu-1', 'x*'], allErroring: false }, 'r', listed)).toEqual({
    nodes: [],
    errors: [
      'nodes: pattern "tpu-*" matches no node of rollout r; its nodes: gpu-1, gpu-2, cpu-1, cpu-2',
      'nodes: pattern "x*" matches no node of rollout r; its nodes: gpu-1, gpu-2, cpu-1, cpu-2',
    ],
  });
  expect(selectNodes({ args: ['*'], allErroring: false }, 'r', [])).toEqual({
    nodes: [],
    errors: ['nodes: pattern "*" matches no node of rollout r; its nodes: none'],
  });
  expect(selectNodes({ args: [], allErroring: false }, 'r', listed)).toEqual({
    nodes: [],
    errors: ['nodes: give at least one node name or pattern, or --all-erroring'],
  });
});
