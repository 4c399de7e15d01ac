import { failureReport } from '../../scripts/jest-failures';

describe('failureReport (npm test repeats a failed phase at its end)', () => {
  const log = [
    'PASS test/e2e/lifecycle.test.ts (21.8 s)',
    '  worker log of a passing file',
    'FAIL test/e2e/ordering.test.ts (101.8 s)',
    '  ● Console',
    '',
    '    console.log',
    '      Jobs on node-003: apply, config',
    '',
    '  ● ordering › packages follow dependsOn',
    '    expect(received).toBe(expected)',
    'PASS test/e2e/taints.test.ts (35.6 s)',
    'FAIL test/faults/worker-sigkill.test.ts',
    '  ● Test suite failed to run',
    '',
    'Test Suites: 2 failed, 2 passed, 4 total',
    'Tests:       2 failed, 43 passed, 45 total',
    'Time:        1200 s',
  ];

  it("keeps each failed file's messages and the totals, without its console output or any passing file", () => {
    expect(failureReport(log)).toEqual([
      'FAIL test/e2e/ordering.test.ts (101.8 s)',
      '  ● ordering › packages follow dependsOn',
      '    expect(received).toBe(expected)',
      'FAIL test/faults/worker-sigkill.test.ts',
      '  ● Test suite failed to run',
      '',
      'Test Suites: 2 failed, 2 passed, 4 total',
      'Tests:       2 failed, 43 passed, 45 total',
    ]);
  });

  it("takes Jest's own summary when it printed one, so no failure shows twice", () => {
    const summary = [
      'Summary of all failing tests',
      'FAIL test/e2e/ordering.test.ts (101.8 s)',
      '  ● ordering › packages follow dependsOn',
      '',
      'Test Suites: 2 failed, 2 passed, 4 total',
      'Tests:       2 failed, 43 passed, 45 total',
    ];
    expect(failureReport([...log.slice(0, -3), ...summary, 'Time:        1200 s'])).toEqual(summary);
  });

  it('reads coloured output as plain text', () => {
    const coloured = [
      '\x1b[0m\x1b[7m\x1b[1m\x1b[31mFAIL\x1b[39m\x1b[22m\x1b[27m\x1b[0m test/e2e/a.test.ts',
      '  ● a › b',
    ];
    expect(failureReport(coloured)).toEqual(['FAIL test/e2e/a.test.ts', '  ● a › b']);
  });

  it('shows the last lines of a run that failed with no failed file (its setup threw, Jest was killed)', () => {
    const crashed = Array.from({ length: 80 }, (_, i) => `setup line ${i}`);
    const report = failureReport([...crashed, 'Error: kube-apiserver did not become ready']);
    expect(report).toHaveLength(50);
    expect(report[49]).toBe('Error: kube-apiserver did not become ready');
  });

  it('cuts a long report of one file and says so', () => {
    const long = ['FAIL test/e2e/big.test.ts', ...Array.from({ length: 500 }, (_, i) => `log line ${i}`)];
    const report = failureReport(long);
    expect(report).toHaveLength(121);
    expect(report[0]).toBe('FAIL test/e2e/big.test.ts');
    expect(report[120]).toMatch(/120 lines shown/);
  });
});
