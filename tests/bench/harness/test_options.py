"""The command lines: bench/run.sh's options, the soak's, and durations."""

import unittest

import harness_path  # noqa: F401
from harness import soak
from harness.console import UsageError
from harness.durations import to_ms
from harness.options import SYSTEMS, HelpRequested, parse_run_options


class RunOptionsTest(unittest.TestCase):
    def test_defaults_run_the_gateway_alone_with_the_scenarios_figures(self):
        opts = parse_run_options(["hot-hits"])
        self.assertEqual(opts.scenario, "hot-hits")
        self.assertEqual(opts.systems, ["gateway"])
        self.assertEqual((opts.duration, opts.warmup, opts.reps, opts.connections), ("",) * 4)
        self.assertEqual(opts.gateway_threads, 1)
        self.assertTrue(opts.build and opts.install and not opts.publish)

    def test_compare_runs_every_system_and_systems_picks_some(self):
        self.assertEqual(parse_run_options(["all", "--compare"]).systems, list(SYSTEMS))
        opts = parse_run_options(["hot-hits", "--systems", "gateway,constant", "--compare"])
        self.assertEqual(opts.systems, ["gateway", "constant"])

    def test_values_are_kept_as_given(self):
        opts = parse_run_options(["zipf-site", "--duration", "4s", "--warmup", "500ms", "--reps",
                                  "1", "--fail-if", "p99>5ms,errors>0", "--no-build",
                                  "--no-install", "--out", "x", "--publish"])
        self.assertEqual((opts.duration, opts.warmup, opts.reps), ("4s", "500ms", "1"))
        self.assertEqual(opts.fail_if, "p99>5ms,errors>0")
        self.assertFalse(opts.build or opts.install)
        self.assertTrue(opts.publish)
        self.assertTrue(opts.command_line.startswith("zipf-site --duration 4s"))

    def test_help(self):
        with self.assertRaises(HelpRequested):
            parse_run_options(["hot-hits", "--help"])

    def test_usage_errors(self):
        for argv in ([], ["a", "b"], ["hot-hits", "--bogus"], ["hot-hits", "--systems", "squid"],
                     ["hot-hits", "--reps", "x"], ["hot-hits", "--gateway-threads", "0"],
                     ["hot-hits", "--connections", "-1"], ["hot-hits", "--client-cpus", "1-"],
                     ["hot-hits", "--duration", "5"], ["hot-hits", "--warmup", "1 s"],
                     ["hot-hits", "--out"]):
            with self.subTest(argv=argv), self.assertRaises(UsageError):
                parse_run_options(argv)

    def test_cpu_lists(self):
        for cpus in ("1", "8-15", "2,4-7"):
            self.assertEqual(parse_run_options(["scaling", "--client-cpus", cpus]).client_cpus,
                             cpus)


class DurationsTest(unittest.TestCase):
    def test_units(self):
        self.assertEqual(to_ms("500ms"), 500)
        self.assertEqual(to_ms("1.5s"), 1500)
        self.assertEqual(to_ms("2m"), 120000)
        self.assertEqual(to_ms("1h"), 3600000)

    def test_zero_only_where_allowed(self):
        self.assertEqual(to_ms("0", zero_allowed=True), 0)
        for text in ("0", "5", "s", "1d", ""):
            with self.subTest(text=text), self.assertRaises(UsageError):
                to_ms(text)


class SoakOptionsTest(unittest.TestCase):
    def test_defaults(self):
        given, ms, flags = soak.parse_options([])
        self.assertEqual(given["--rate"], "1500")
        self.assertEqual(ms["--duration"], 30 * 60000)
        self.assertEqual(flags, set())

    def test_zero_turns_a_fault_off(self):
        _, ms, _ = soak.parse_options(["--redis-every", "0", "--publish"])
        self.assertEqual(ms["--redis-every"], 0)

    def test_the_run_must_leave_something_to_judge(self):
        for argv in (["--duration", "30s"], ["--rate", "1"], ["--sample-every", "500ms"],
                     ["--duration", "2m", "--settle", "2m"], ["--quiet", "30m"], ["--bogus"]):
            with self.subTest(argv=argv), self.assertRaises(UsageError):
                soak.parse_options(argv)

    def test_every_fires_once_per_period(self):
        every = soak.Every(1000)
        self.assertEqual([every.due(t) for t in (0, 999, 1000, 1500, 2000)],
                         [False, False, True, False, True])
        self.assertFalse(soak.Every(0).due(10 ** 9))


if __name__ == "__main__":
    unittest.main()
