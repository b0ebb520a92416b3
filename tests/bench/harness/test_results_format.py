"""runs.tsv rows and the figures, tables and plot scales taken from them."""

import unittest

import harness_path  # noqa: F401
from harness import plots, runs_table, soak_report, summary
from harness.constant_bodies import closest_to_mean
from harness.runs_table import COLUMNS, RunsTable

# wg-bench --tsv: label responses rps p50 p90 p99 p999 max errors unexpected all bytes mode
# offered late unsent exit visitors_p99 walker_responses walker_p99
BENCH_LINE = ("gateway\t50000\t16666.7\t1500.0\t8000.0\t13000.0\t19000.0\t20000.0\t0\t0\t62500\t"
              "900000000\tclosed\t-\t0\t0\t0\t13000.0\t5000\t21000.0")


def runs_row(line):
    return dict(zip(COLUMNS, line.rstrip("\n").split("\t")))


class RowTest(unittest.TestCase):
    def test_a_run_with_figures(self):
        line = runs_table.row("quota-walk", "gateway", 1, 1, 0, BENCH_LINE, 125, 17000, 5000,
                              "24", "530000", 1500)
        r = runs_row(line)
        self.assertEqual(len(line.split("\t")), len(COLUMNS))
        self.assertEqual((r["rps"], r["all_responses"], r["upstream_calls"]),
                         ("16666.7", "62500", "125"))
        self.assertEqual(r["upstream_per_1k"], "2")          # 125 per 62,500 answers
        self.assertEqual(r["redis_per_request"], "0.1000")   # 5,000 over 50,000 measured
        self.assertEqual(r["walker_share"], "0.1000")
        self.assertEqual((r["visitors_p99_us"], r["walker_p99_us"]), ("13000.0", "21000.0"))
        self.assertEqual(r["server_cpu_ms_per_1k"], "30")
        self.assertEqual((r["threads"], r["exit"]), ("1", "0"))

    def test_a_run_without_figures_keeps_its_status_and_counts(self):
        for printed in ("", "label\tresponses", "gateway\t1\t2"):
            r = runs_row(runs_table.row("hot-hits", "nginx", 2, 1, 3, printed, 7, 9000, None,
                                        "-", "-", 0))
            self.assertEqual(len(r), len(COLUMNS))
            self.assertEqual((r["rps"], r["upstream_calls"], r["peak_rss_kb"], r["exit"]),
                             ("-", "7", "9000", "3"))
            self.assertEqual(r["server_cpu_ms_per_1k"], "-")


def table(rows):
    return RunsTable([dict(zip(COLUMNS, r.split("\t"))) for r in rows])


def tsv(system, rep, rps, threads="1", errors="0"):
    cells = ["hot-hits", system, str(rep), str(rps), "500", "700", "900", "1000", "2000", errors,
             "0", "1000", "16", "16", "15000", "-", "24", "524288", threads, "0", "900", "0",
             "0.0000", "-", "30"]
    return "\t".join(cells)


class FiguresTest(unittest.TestCase):
    def test_median_and_range(self):
        t = table([tsv("gateway", i, v) for i, v in enumerate((3, 1, 2, 10), 1)])
        self.assertEqual(t.spread("hot-hits", "gateway", "rps"), ("2.5", "1", "10"))
        self.assertEqual(t.spread("hot-hits", "nginx", "rps"), ("?", "?", "?"))
        self.assertEqual(table([tsv("gateway", 1, "-")]).median("hot-hits", "gateway", "rps"), "-")
        self.assertEqual(t.exits("hot-hits", "gateway"), "0,0,0,0")

    def test_number_formatting_passes_missing_figures_through(self):
        self.assertEqual(runs_table.ms("13172.7"), "13.173")
        self.assertEqual(runs_table.ms("-"), "-")
        self.assertEqual(runs_table.rps("15885.0"), "15885")
        self.assertEqual(runs_table.ratio("2", "4"), "0.50")
        self.assertEqual(runs_table.ratio("2", "0"), "n/a")
        self.assertEqual(runs_table.ratio("?", "1"), "n/a")

    def test_main_table_row(self):
        t = table([tsv("gateway", 1, 15885), tsv("constant", 1, 18266)])
        lines = summary.main_table(t, ["hot-hits"], ["gateway", "nginx", "constant"])
        self.assertEqual(len(lines), 4)  # nginx has no run: no row
        self.assertEqual(lines[2], "| hot-hits | gateway | 1 | 15885 | 0.500 | 0.700 | 0.900 | "
                                   "1.000 | 2.000 | 0 | 0 | 16 | 16 | 14.6 | 30.0 | 0 |")
        self.assertIn("| hot-hits | constant | 1 | 18266 |", lines[3])
        self.assertIn("| - | - | 14.6 |", lines[3])  # a reference has no upstream

    def test_rss_beyond_l1(self):
        t = table([tsv("gateway", 1, 1)])
        self.assertEqual(summary.beyond_l1(t, "hot-hits"), "14.1 (14.1..14.1)")

    def test_scaling_table_names_runs_with_errors(self):
        t = table([tsv("gateway", 1, 1000, threads="1"), tsv("gateway", 1, 1900, threads="2",
                                                             errors="3")])
        t.rows = [dict(r, scenario="scaling") for r in t.rows]
        lines = summary.scaling_table(t, "scaling", "scaling: pinned")
        self.assertIn("| 2 | 1 / 0 | 1900 | ? | 950 | - | n/a | 1.90 | n/a |", lines)
        self.assertEqual(lines[-1], "Runs with transport errors or unexpected statuses (see "
                                    "runs.tsv): gateway N=2 run 1: 3 errors, 0 unexpected status.")

    def test_failures_paragraph(self):
        self.assertEqual(summary.failures_paragraph([], [], ""), ["Every wg-bench run exited 0."])
        lines = summary.failures_paragraph(["a"], ["b"], "p99>5ms")
        self.assertEqual(lines, ["Runs whose wg-bench did not exit 0 (gateway runs with "
                                 "`--fail-if p99>5ms`):", "", "- a", "- b"])


class PlotsTest(unittest.TestCase):
    def test_value_labels_keep_three_significant_digits(self):
        self.assertEqual([plots.value_label(v) for v in (123456, 12345, 123.4, 12.34, 1.234,
                                                         0.01894, 0)],
                         ["123k", "12.3k", "123", "12.3", "1.23", "0.0189", "0"])

    def test_the_scale_rule(self):
        linear = [("a", 100.0, 90.0, 110.0), ("b", 20.0, 20.0, 20.0)]
        self.assertEqual(plots.log_axis_floor(linear), 0)
        self.assertEqual(plots.log_axis_floor([("a", 1000.0, 1000.0, 1000.0),
                                               ("b", 5.0, 5.0, 5.0)]), 1.0)

    def test_an_all_zero_panel_is_not_drawn(self):
        script, notes = plots.bar_chart_script([("p50", [("gateway", 0.0, 0.0, 0.0)])], "x.png",
                                               "t", "y", "f", {})
        self.assertIsNone(script)
        self.assertEqual(notes, ["p50: all values are zero or missing, not drawn",
                                 "nothing to draw"])


class ConstantBodiesTest(unittest.TestCase):
    def test_the_answer_closest_to_each_kinds_mean(self):
        chosen = closest_to_mean([("widget", 100, "/w1"), ("widget", 300, "/w2"),
                                  ("widget", 190, "/w3"), ("reviews", 5, "/r1")])
        self.assertEqual(chosen["widget"], (3, 590 / 3, "/w3"))
        self.assertEqual(chosen["reviews"], (1, 5, "/r1"))


class SoakJudgementTest(unittest.TestCase):
    @staticmethod
    def samples(rss_values):
        return [{"t_s": str(10.0 * i), "instance": inst, "rss_less_cache_kb": str(rss),
                 "fds": "80", "redis_clients": "6"}
                for i, rss in enumerate(rss_values) for inst in ("0", "1")]

    def test_growth_after_the_settle_period(self):
        steady = soak_report.growth(self.samples([900000, 20000, 20000, 21000, 21000, 22000,
                                                  22000]), settle_ms=10000)
        self.assertTrue(all(verdict == "ok" for *_, verdict in steady))
        grew = soak_report.growth(self.samples([20000] * 3 + [60000] * 3), settle_ms=0)
        self.assertIn(("rss_less_cache", "0", 20000, 60000, "GREW"), grew)

    def test_minutes_take_the_samples_maxima(self):
        rows = soak_report.minutes_rows(self.samples([1024, 2048, 0, 0, 0, 0, 3072]),
                                        [{0: ("100", "5.00")}, {}])
        self.assertEqual(rows[0], [0, "2.0", "2.0", 80, 80, 6, "100", "-", "5.00", "-"])
        self.assertEqual(rows[1][0:2], [1, "3.0"])

    def test_fault_counts(self):
        faults = [{"fault": "b"}, {"fault": "a"}, {"fault": "b"}]
        self.assertEqual(soak_report.fault_counts(faults), "1 × a; 2 × b")


if __name__ == "__main__":
    unittest.main()
