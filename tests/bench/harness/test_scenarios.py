"""Scenario loading and the CPU pinning plans."""

import os
import tempfile
import unittest

import harness_path  # noqa: F401
from harness import pinning, scenarios
from harness.console import UsageError


class ScenarioFilesTest(unittest.TestCase):
    def test_all_is_every_listed_scenario_and_each_has_a_file(self):
        files = scenarios.scenario_files("all")
        self.assertEqual([os.path.basename(f) for f in files],
                         [f"{name}.toml" for name in scenarios.ALL_SCENARIOS])
        for file in files:
            self.assertTrue(os.path.isfile(file), file)

    def test_a_name_or_a_path(self):
        by_name = scenarios.scenario_files("hot-hits")
        self.assertEqual(scenarios.scenario_files(by_name[0]), by_name)

    def test_an_unknown_scenario_is_a_usage_error(self):
        with self.assertRaises(UsageError):
            scenarios.scenario_files("no-such-scenario")

    def test_open_loop_rate(self):
        self.assertEqual(scenarios.open_loop_rate(scenarios.scenario_path("upstream-outage")),
                         "2000")
        self.assertEqual(scenarios.open_loop_rate(scenarios.scenario_path("hot-hits")), "-")
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
            f.write('name = "x"\n[load]\nmode = "open"\nrate = 150\n')
            f.flush()
            self.assertEqual(scenarios.open_loop_rate(f.name), "150")

    def test_a_shortened_run_keeps_the_fault_inside(self):
        runner = {"fault_at_ms": "4000", "fault_for_ms": "4000"}
        self.assertEqual(scenarios.fault_window(runner, 12000), (4000, 4000))
        self.assertEqual(scenarios.fault_window(runner, 3000), (900, 1200))

    def test_sweeps_and_references(self):
        self.assertTrue(scenarios.is_sweep("scaling") and scenarios.is_sweep("scaling-big"))
        self.assertFalse(scenarios.is_sweep("hot-hits"))
        self.assertTrue(scenarios.is_reference("constant") and scenarios.is_reference("static"))
        self.assertFalse(scenarios.is_reference("nginx"))


class PinningTest(unittest.TestCase):
    def test_cpu_lists(self):
        self.assertEqual(pinning.cpu_count_of("1"), 1)
        self.assertEqual(pinning.cpu_count_of("8-15"), 8)
        self.assertEqual(pinning.cpu_count_of("2,4-7"), 5)

    def test_default(self):
        self.assertEqual((pinning.default_pinning(2).server, pinning.default_pinning(2).other),
                         ("0", "1"))
        self.assertEqual(pinning.default_pinning(8).other, "1-7")
        self.assertEqual(pinning.default_pinning(1).server, "")

    def test_sweep_on_two_cpus_shares_the_last_one(self):
        sweep = pinning.sweep_pinning("", "", "", ncpu=2)
        self.assertEqual((sweep.max_threads, sweep.client_cpus, sweep.bench_threads), (2, "1", 1))
        self.assertEqual((sweep.server(1), sweep.server(2), sweep.server(5)), ("0", "0-1", "0-1"))
        self.assertIn("from N = 2 on the server shares CPU 1", sweep.note)

    def test_sweep_leaves_the_cpus_above_n_to_the_client(self):
        sweep = pinning.sweep_pinning("4", "", "", ncpu=16)
        self.assertEqual((sweep.client_cpus, sweep.bench_threads), ("4-15", 12))
        self.assertNotIn("shares", sweep.note)
        self.assertEqual(pinning.sweep_pinning("4", "8-9", "3", ncpu=16).bench_threads, 3)


if __name__ == "__main__":
    unittest.main()
