import fc from 'fast-check';
import {
  decodeNodeState,
  encodeNodeState,
  entryKey,
  nodeMetadataKeys,
  STAGES,
  type NodeState,
  type PackageEntry,
} from '../../model';

const entryArb: fc.Arbitrary<PackageEntry> = fc.record(
  {
    name: fc.stringMatching(/^[a-z][-a-z0-9]{0,8}[a-z]$/),
    version: fc.stringMatching(/^[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?$/),
    image: fc.string(),
    containerSHA: fc.stringMatching(/^sha256:[a-f0-9]{64}$/),
    stage: fc.constantFrom(...STAGES),
    state: fc.constantFrom('complete', 'in_progress', 'skipped', 'erroring', 'unknown' as const),
    restarts: fc.nat(),
    attempts: fc.nat(),
    lastError: fc.string(),
  },
  { requiredKeys: ['name', 'version', 'image', 'stage', 'state'] },
);
const stateArb: fc.Arbitrary<NodeState> = fc
  .array(entryArb, { maxLength: 6 })
  .map((entries) => Object.fromEntries(entries.map((e) => [entryKey(e.name, e.version), e])));

describe('node-state codec', () => {
  test('decodes the e2e-asserted Skyhook shape (§4)', () => {
    const json =
      '{"dexter|1.2.3":{"name":"dexter","version":"1.2.3","image":"ghcr.io/nvidia/skyhook/agentless","stage":"config","state":"complete"},' +
      '"foobar|1.2":{"name":"foobar","version":"1.2","image":"x","containerSHA":"sha256:abc","stage":"config","state":"complete","restarts":2}}';
    const decoded = decodeNodeState(json);
    expect(decoded).toEqual({ ok: true, state: JSON.parse(json) });
    expect(decoded.ok && encodeNodeState(decoded.state)).toBe(json);
  });

  test('absent or empty annotation is an empty state', () => {
    expect(decodeNodeState(undefined)).toEqual({ ok: true, state: {} });
    expect(decodeNodeState('')).toEqual({ ok: true, state: {} });
  });

  test.each([
    ['not json', '{', 'invalid-json', /not JSON/],
    ['an array', '[]', 'invalid-shape', /nodeState: .*\(got a list\)/],
    ['an entry of the wrong type', '{"a|1":"complete"}', 'invalid-shape', /nodeState\["a\|1"\]: .*\(got "complete"\)/],
    [
      'a bad stage',
      '{"a|1":{"name":"a","version":"1","image":"i","stage":"deploy","state":"complete"}}',
      'invalid-shape',
      /nodeState\["a\|1"\]\.stage/,
    ],
    [
      'a bad state',
      '{"a|1":{"name":"a","version":"1","image":"i","stage":"apply","state":"done"}}',
      'invalid-shape',
      /state/,
    ],
    [
      'negative restarts',
      '{"a|1":{"name":"a","version":"1","image":"i","stage":"apply","state":"complete","restarts":-1}}',
      'invalid-shape',
      /restarts/,
    ],
    [
      'a key that does not match',
      '{"b|1":{"name":"a","version":"1","image":"i","stage":"apply","state":"complete"}}',
      'invalid-shape',
      /does not match/,
    ],
    ['null', 'null', 'invalid-shape', /nodeState/],
  ])('malformed input (%s) is a typed error', (_what, input, kind, message) => {
    const decoded = decodeNodeState(input);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.error.kind).toBe(kind);
      expect(decoded.error.message).toMatch(message);
    }
  });

  test('encode omits empty optional fields', () => {
    const state = {
      'a|1': {
        name: 'a',
        version: '1',
        image: 'i',
        stage: 'apply' as const,
        state: 'complete' as const,
        restarts: 0,
        lastError: '',
      },
    };
    expect(encodeNodeState(state)).toBe(
      '{"a|1":{"name":"a","version":"1","image":"i","stage":"apply","state":"complete"}}',
    );
  });

  test('round trip: decode(encode(s)) equals s without empty fields, and encoding is canonical', () => {
    fc.assert(
      fc.property(stateArb, (state) => {
        const text = encodeNodeState(state);
        const decoded = decodeNodeState(text);
        expect(decoded.ok).toBe(true);
        if (decoded.ok) expect(encodeNodeState(decoded.state)).toBe(text);
        const expected = JSON.parse(
          JSON.stringify(state, (k, v: unknown) =>
            ['restarts', 'attempts', 'lastError', 'containerSHA'].includes(k) && !v ? undefined : v,
          ),
        );
        expect(decoded.ok && decoded.state).toEqual(expected);
      }),
    );
  });

  test('decoding never throws, whatever the text', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          stateArb.map((s) => encodeNodeState(s).slice(0, -3)),
        ),
        (text) => {
          const decoded = decodeNodeState(text);
          expect(typeof decoded.ok).toBe('boolean');
        },
      ),
    );
  });

  test('metadata keys under a configurable prefix', () => {
    expect(nodeMetadataKeys('r').nodeState).toBe('skyhook.nvidia.com/nodeState_r');
    expect(nodeMetadataKeys('r', 'nodewright.nvidia.com/')).toMatchObject({
      status: 'nodewright.nvidia.com/status_r',
      cordon: 'nodewright.nvidia.com/cordon_r',
      erroringCondition: 'nodewright.nvidia.com/r/Erroring',
    });
    expect(() => nodeMetadataKeys('r', 'no-slash')).toThrow(/must end with/);
  });
});
