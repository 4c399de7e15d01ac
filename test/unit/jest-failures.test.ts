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
    // As Jest colours a result header: the spaces around FAIL inside the codes.
    const header =
      '\x1b[0m\x1b[7m\x1b[1m\x1b[31m FAIL \x1b[39m\x1b[22m\x1b[27m\x1b[0m \x1b[2mtest/e2e/\x1b[22m\x1b[1ma.test.ts\x1b[22m';
    const coloured = [header, '  ● a › b', '\x1b[1mTests:       \x1b[22m\x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m'];
    expect(failureReport(coloured)).toEqual([' FAIL  test/e2e/a.test.ts', '  ● a › b', 'Tests:       1 failed']);
  });

  it('keeps a failed test whose name begins with Console', () => {
    const named = ['FAIL test/e2e/a.test.ts', '  ● Console output › is kept', '    expected', 'Tests:       1 failed'];
    expect(failureReport(named)).toEqual(named);
  });

  it('adds the last lines when Jest never printed its totals (killed after a file failed)', () => {
    const killed = ['FAIL test/e2e/a.test.ts', '  ● a › b', 'PASS test/e2e/c.test.ts', '[faults] worker rss 900 MiB'];
    expect(failureReport(killed)).toEqual(['FAIL test/e2e/a.test.ts', '  ● a › b', ...killed]);
  });

  it('shows the last lines of a run that failed with no failed file (its setup threw, Jest was killed)', () => {
    const crashed = Array.from({ length: 80 }, (_, i) => `setup line ${i}`);
    const report = failureReport([...crashed, 'Error: kube-apiserver did not become ready']);
    expect(report).toHaveLength(50);
    expect(report[49]).toBe('Error: kube-apiserver did not become ready');
  });

  it('cuts a long report of one file and says so', () => {
    const lines = Array.from({ length: 500 }, (_, i) => `log line ${i}`);
    const report = failureReport(['FAIL test/e2e/big.test.ts', ...lines, 'Tests:       1 failed']);
    expect(report).toHaveLength(122);
    expect(report[0]).toBe('FAIL test/e2e/big.test.ts');
    expect(report[120]).toMatch(/120 lines shown/);
  });
});
