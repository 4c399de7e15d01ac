/** Lines of one failed test file's report kept, at most: its worker's logs can run long. */
const LINES_PER_FILE = 120;

/**
 * Jest's report of each test file that failed, from its `FAIL` line to the next file's or the totals (the failed tests'
 * messages and what the file logged), then the totals: what a run's log must end with when the failures themselves
 * scrolled by long before.
 */
export function failureReport(lines: readonly string[]): string[] {
  const report: string[] = [];
  let inFailedFile = false;
  let kept = 0;
  for (const line of lines) {
    if (/^(PASS|FAIL) /.test(line)) {
      inFailedFile = line.startsWith('FAIL');
      kept = 0;
    } else if (/^Test Suites: /.test(line)) inFailedFile = false;
    if (inFailedFile) {
      if (kept < LINES_PER_FILE) report.push(line);
      else if (kept === LINES_PER_FILE)
        report.push(`  [${LINES_PER_FILE} lines shown; the rest is in the run's output above]`);
      kept++;
    }
    if (/^(Test Suites|Tests): /.test(line)) report.push(line);
  }
  return report;
}
