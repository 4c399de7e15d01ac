import { failureReport } from '../../scripts/jest-failures';

describe('failureReport (npm test repeats a failed phase at its end)', () => {
  const log = [
    'PASS test/e2e/lifecycle.test.ts (21.8 s)',
    '  worker log of a passing file',
    'FAIL test/e2e/ordering.test.ts (101.8 s)',
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

  it('keeps each failed file with its messages and the totals, and no passing file', () => {
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

  it('cuts a long report of one file and says so', () => {
    const long = ['FAIL test/e2e/big.test.ts', ...Array.from({ length: 500 }, (_, i) => `log line ${i}`)];
    const report = failureReport(long);
    expect(report).toHaveLength(121);
    expect(report[0]).toBe('FAIL test/e2e/big.test.ts');
    expect(report[120]).toMatch(/120 lines shown/);
  });
});
