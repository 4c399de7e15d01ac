import { stripVTControlCharacters } from 'node:util';

/** Lines of one failed test file's report kept, at most. */
const LINES_PER_FILE = 120;
/** What is shown of a phase that failed with no failed file (its setup threw, Jest crashed or was killed). */
const TAIL_LINES = 50;
/** A file's result header: `FAIL path`, or ` FAIL  path` once its colour codes are stripped. */
const FAIL = /^ ?FAIL /;
const PASS = /^ ?PASS /;

/**
 * What a failed Jest run's log must end with when its failures scrolled by long before: Jest's own summary of the
 * failing tests when it printed one (past 20 test files), else each failed file's report (its `FAIL` line and the
 * failed tests' messages, without the console output Jest prints before them), then the totals; with no failed file
 * at all, the run's last lines.
 */
export function failureReport(lines: readonly string[]): string[] {
  const plain = lines.map((line) => stripVTControlCharacters(line));
  const summary = plain.findIndex((line) => line.startsWith('Summary of all failing tests'));
  const report = summary >= 0 ? upToTotals(plain.slice(summary)) : failedFiles(plain);
  if (!report.some((line) => FAIL.test(line))) return plain.slice(-TAIL_LINES);
  // No totals: Jest did not finish (killed, crashed); how it ended is in its last lines.
  if (!report.some((line) => line.startsWith('Tests: '))) return [...report, ...plain.slice(-TAIL_LINES)];
  return report;
}

/** Jest's summary up to and with its totals (the timing and hints after them left out). */
function upToTotals(summary: string[]): string[] {
  const totals = summary.findIndex((line) => line.startsWith('Tests: '));
  return totals < 0 ? summary : summary.slice(0, totals + 1);
}

function failedFiles(lines: readonly string[]): string[] {
  const report: string[] = [];
  let inFailedFile = false;
  let inConsole = false;
  let kept = 0;
  for (const line of lines) {
    if (FAIL.test(line) || PASS.test(line)) {
      inFailedFile = FAIL.test(line);
      inConsole = false;
      kept = 0;
    } else if (/^(Test Suites|Tests): /.test(line)) inFailedFile = false;
    // Jest prints a file's console output before its failures: a long log would push the failures past the cap.
    if (/^ {2}● /.test(line)) inConsole = line.trimEnd() === '  ● Console';
    if (inFailedFile && !inConsole) {
      if (kept < LINES_PER_FILE) report.push(line);
      else if (kept === LINES_PER_FILE)
        report.push(`  [${LINES_PER_FILE} lines shown; the rest is in the run's output above]`);
      kept++;
    }
    if (/^(Test Suites|Tests): /.test(line)) report.push(line);
  }
  return report;
}
