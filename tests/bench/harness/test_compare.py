"""compare's verdicts and arguments, on runs.tsv files written here."""

import os
import tempfile
import unittest

import harness_path  # noqa: F401
from harness import compare
from harness.console import UsageError

HEADER = ("scenario\tsystem\trep\trps\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\terrors\t"
          "unexpected\tall_responses\tupstream_calls\tupstream_per_1k\tpeak_rss_kb\tthreads\texit\n")


def row(system, rep, rps, p99=950, upstream=16, scenario="hot-hits", threads=1):
    return (f"{scenario}\t{system}\t{rep}\t{rps}\t500\t700\t{p99}\t3000\t9000\t0\t0\t"
            f"{int(rps * 10)}\t{upstream}\t-\t15000\t{threads}\t0\n")


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def runs(self, name, rows):
        path = os.path.join(self.dir.name, f"{name}.tsv")
        with open(path, "w") as f:
            f.write(HEADER + "".join(rows))
        return path

    def table(self, a_rows, b_rows, threshold=10):
        return compare.compare_tables(self.runs("a", a_rows), self.runs("b", b_rows), threshold)

    def verdict(self, lines, system):
        return next(line for line in lines if f"| {system} |" in line).rsplit("|", 2)[-2].strip()

    def test_identical_runs_are_within_noise(self):
        rows = [row("gateway", i, rps) for i, rps in enumerate((83000, 84000, 82000), 1)]
        lines, regressions = self.table(rows, rows)
        self.assertEqual(regressions, 0)
        self.assertEqual(self.verdict(lines, "gateway"), "within noise")

    def test_a_clear_drop_is_a_regression_named_by_figure(self):
        a = [row("gateway", i, rps) for i, rps in enumerate((83000, 84000, 82000), 1)]
        b = [row("gateway", i, rps) for i, rps in enumerate((50000, 51000, 49000), 1)]
        lines, regressions = self.table(a, b, threshold=5)
        self.assertEqual(regressions, 1)
        self.assertEqual(self.verdict(lines, "gateway"), "**regression**: req/s")
        self.assertIn("83000 → 50000 (-39.8%)", lines[2])

    def test_overlapping_ranges_are_noise_whatever_the_median(self):
        a = [row("gateway", i, rps) for i, rps in enumerate((60000, 83000, 95000), 1)]
        b = [row("gateway", i, rps) for i, rps in enumerate((62000, 73000, 90000), 1)]
        lines, regressions = self.table(a, b)
        self.assertEqual(regressions, 0)
        self.assertIn("(-12.0%)", lines[2])

    def test_a_faster_run_is_an_improvement(self):
        a = [row("gateway", 1, 50000)]
        b = [row("gateway", 1, 83000)]
        lines, _ = self.table(a, b)
        self.assertEqual(self.verdict(lines, "gateway"), "improvement: req/s")

    def test_p99_is_judged_against_twice_the_threshold(self):
        a = [row("gateway", 1, 83000, p99=1000)]
        lines, _ = self.table(a, [row("gateway", 1, 83000, p99=1150)])  # +15 %: under 20 %
        self.assertEqual(self.verdict(lines, "gateway"), "within noise")

    def test_p99_past_twice_the_threshold_is_a_regression(self):
        lines, regressions = self.table([row("gateway", 1, 83000, p99=1000)],
                                        [row("gateway", 1, 83000, p99=1250)])
        self.assertEqual(regressions, 1)
        self.assertEqual(self.verdict(lines, "gateway"), "**regression**: p99 ms")

    def test_upstream_calls_count_only_when_they_moved_by_one_per_thousand(self):
        # 16 calls over 830,000 answers against 32: +100 %, but 0.02 per 1,000.
        lines, regressions = self.table([row("gateway", 1, 83000, upstream=16)],
                                        [row("gateway", 1, 83000, upstream=32)])
        self.assertEqual(regressions, 0)
        self.assertIn("0.01928 → 0.03855", lines[2])

    def test_the_references_drift_is_netted_out(self):
        a = [row("gateway", 1, 83000), row("constant", 1, 100000)]
        b = [row("gateway", 1, 70500), row("constant", 1, 85000)]
        lines, regressions = self.table(a, b)
        self.assertEqual(regressions, 0)
        self.assertEqual(self.verdict(lines, "gateway"), "within noise (net of the reference)")
        self.assertEqual(self.verdict(lines, "constant"), "reference: the machine's drift")
        _, regressions = self.table([row("gateway", 1, 83000)], [row("gateway", 1, 70500)])
        self.assertEqual(regressions, 1)

    def test_a_sweep_is_compared_per_thread_count(self):
        rows = [row("gateway", 1, 50000, scenario="scaling", threads=n) for n in (1, 2)]
        lines, _ = self.table(rows, rows)
        self.assertTrue(any("| scaling (N=2) | gateway |" in line for line in lines))

    def test_no_row_in_common_is_a_usage_error(self):
        with self.assertRaises(UsageError):
            self.table([row("gateway", 1, 83000)], [row("nginx", 1, 60000)])

    def test_a_runs_tsv_without_the_key_columns_is_a_usage_error(self):
        path = os.path.join(self.dir.name, "bad.tsv")
        with open(path, "w") as f:
            f.write("x\ty\n1\t2\n")
        with self.assertRaises(UsageError):
            compare.Side(path)


class CompareArgumentsTest(unittest.TestCase):
    def test_threshold_with_or_without_percent(self):
        self.assertEqual(compare.parse_arguments(["a", "b"]), ("a", "b", "10"))
        self.assertEqual(compare.parse_arguments(["a", "b", "--threshold", "5%"])[2], "5")
        self.assertEqual(compare.parse_arguments(["--threshold=2.5", "a", "b"])[2], "2.5")

    def test_usage_errors(self):
        for argv in (["a"], ["a", "b", "c"], ["a", "b", "--threshold", "lots"],
                     ["a", "b", "--threshold"], ["a", "b", "--bogus"]):
            with self.subTest(argv=argv), self.assertRaises(UsageError):
                compare.parse_arguments(argv)

    def test_a_folder_without_runs_tsv_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as folder, self.assertRaises(UsageError):
            compare.results_folder(folder)


if __name__ == "__main__":
    unittest.main()
