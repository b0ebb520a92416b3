#include <boost/test/unit_test.hpp>

// bench/run.sh as a child process. `compare` on result folders written here (no server, no
// build); and one short real run of the gateway and the constant server into a folder given
// with --out, which must leave every tracked file as it was. No timing assertions: the figures
// of the real run are only checked to be there.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/paths.hpp"

using namespace wg::test;
namespace fs = std::filesystem;

namespace {

const std::string kSourceDir = source_dir();
const std::string kRunScript = kSourceDir + "/bench/run.sh";

struct Result {
  int exit_code = -1;  // -1: killed, or did not exit normally
  std::string output;  // stdout and stderr
};

Result run(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
  ChildProcess child(std::move(args));
  const int status = child.wait_exit(timeout);
  Result result;
  result.output = child.output();
  result.exit_code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  BOOST_TEST_MESSAGE(result.output);
  return result;
}

Result run_script(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), {"bash", kRunScript});
  return run(std::move(args), timeout);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  return fields;
}

// The line of `text` that contains `needle` ("" when none does).
std::string line_with(const std::string& text, const std::string& needle) {
  for (const auto& line : lines_of(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

constexpr const char* kHeader =
    "scenario\tsystem\trep\trps\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\terrors\tunexpected\t"
    "all_responses\tupstream_calls\tupstream_per_1k\tpeak_rss_kb\tredis_per_request\tl1_entries\t"
    "l1_bytes\tthreads\texit\n";

// One runs.tsv row: the figures compare reads, the rest plausible.
std::string row(const std::string& scenario, const std::string& system, int rep, double rps,
                double p99_us) {
  std::ostringstream out;
  out << scenario << '\t' << system << '\t' << rep << '\t' << rps << "\t500\t700\t" << p99_us
      << "\t3000\t9000\t0\t0\t" << static_cast<long>(rps * 10) << "\t16\t0.0189\t15000\t-\t24\t"
      << "550000\t1\t0\n";
  return out.str();
}

// A results folder with runs.tsv: hot-hits, gateway and nginx (and the constant reference when
// given), one row per run.
std::string results_folder(const TempDir& dir, const std::string& name,
                           const std::vector<double>& gateway_rps,
                           const std::vector<double>& nginx_rps,
                           const std::vector<double>& constant_rps = {}) {
  const std::string folder = dir.file(name);
  fs::create_directories(folder);
  std::string tsv = kHeader;
  for (std::size_t i = 0; i < gateway_rps.size(); ++i) {
    tsv += row("hot-hits", "gateway", static_cast<int>(i + 1), gateway_rps[i], 950);
    tsv += row("hot-hits", "nginx", static_cast<int>(i + 1), nginx_rps[i], 1400);
    if (i < constant_rps.size()) {
      tsv += row("hot-hits", "constant", static_cast<int>(i + 1), constant_rps[i], 800);
    }
  }
  std::ofstream(folder + "/runs.tsv") << tsv;
  return folder;
}

bool on_path(const std::string& tool) {
  return run({"bash", "-c",
              "command -v " + tool + " >/dev/null 2>&1 || [ -x /usr/sbin/" + tool + " ]"})
             .exit_code == 0;
}

// Tracked files under bench/ that differ from HEAD (and the target of bench/results/latest), or
// nullopt when the sources are not a git checkout. Only bench/: other work may be under way in
// the rest of the tree while the test runs.
std::optional<std::string> tracked_state() {
  const Result status = run({"git", "-C", kSourceDir, "status", "--porcelain",
                             "--untracked-files=no", "--", "bench", ".gitignore"});
  if (status.exit_code != 0) return std::nullopt;
  std::error_code ec;
  const auto latest = fs::read_symlink(kSourceDir + "/bench/results/latest", ec);
  return status.output + "\nlatest -> " + (ec ? std::string("(none)") : latest.string());
}

// The folders bench/run.sh would make for a hot-hits run without --out.
std::set<std::string> hot_hits_folders() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kSourceDir + "/bench/results", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find("-hot-hits") != std::string::npos) names.insert(name);
  }
  return names;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_script_test)

BOOST_AUTO_TEST_SUITE(compare)

BOOST_AUTO_TEST_CASE(identical_folders_are_no_regression) {
  TempDir dir;
  const auto a = results_folder(dir, "a", {83000, 84000, 82000}, {60000, 61000, 59000});
  const auto b = results_folder(dir, "b", {83000, 84000, 82000}, {60000, 61000, 59000});
  const Result r = run_script({"compare", a, b});
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(line_with(r.output, "| hot-hits | gateway |").find("within noise") !=
             std::string::npos);
  BOOST_TEST(r.output.find("No regression.") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_clear_drop_is_a_regression) {
  TempDir dir;
  const auto a = results_folder(dir, "a", {83000, 84000, 82000}, {60000, 61000, 59000});
  const auto b = results_folder(dir, "b", {50000, 51000, 49000}, {60000, 61000, 59000});
  const Result r = run_script({"compare", a, b, "--threshold", "5%"});
  BOOST_TEST(r.exit_code == 1);
  const std::string gateway = line_with(r.output, "| hot-hits | gateway |");
  BOOST_TEST(gateway.find("regression") != std::string::npos);
  BOOST_TEST(gateway.find("req/s") != std::string::npos);
  BOOST_TEST(gateway.find("-39.8%") != std::string::npos);  // 83000 → 50000
  BOOST_TEST(line_with(r.output, "| hot-hits | nginx |").find("within noise") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(overlapping_noisy_runs_are_not_a_regression) {
  TempDir dir;
  // The median drops 12 %, past the threshold, but the runs' ranges overlap.
  const auto a = results_folder(dir, "a", {60000, 83000, 95000}, {60000, 61000, 59000});
  const auto b = results_folder(dir, "b", {62000, 73000, 90000}, {60000, 61000, 59000});
  const Result r = run_script({"compare", a, b});
  BOOST_TEST(r.exit_code == 0);
  const std::string gateway = line_with(r.output, "| hot-hits | gateway |");
  BOOST_TEST(gateway.find("-12.0%") != std::string::npos);
  BOOST_TEST(gateway.find("within noise") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_drop_the_constant_reference_shares_is_the_machine_not_the_code) {
  TempDir dir;
  // Everything 15 % slower, the reference included: the machine was busier during B.
  const auto a = results_folder(dir, "a", {83000, 84000, 82000}, {60000, 61000, 59000},
                                {100000, 101000, 99000});
  const auto b =
      results_folder(dir, "b", {70500, 71400, 69700}, {51000, 51800, 50100}, {85000, 85800, 84100});
  const Result r = run_script({"compare", a, b});
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(line_with(r.output, "| hot-hits | gateway |").find("within noise (net of") !=
             std::string::npos);
  BOOST_TEST(line_with(r.output, "| hot-hits | constant |").find("the machine's drift") !=
             std::string::npos);
  // Without the reference, the same drop is a regression.
  const auto a2 = results_folder(dir, "a2", {83000, 84000, 82000}, {60000, 61000, 59000});
  const auto b2 = results_folder(dir, "b2", {70500, 71400, 69700}, {51000, 51800, 50100});
  BOOST_TEST(run_script({"compare", a2, b2}).exit_code == 1);
}

BOOST_AUTO_TEST_CASE(a_missing_folder_is_a_usage_error) {
  TempDir dir;
  const auto a = results_folder(dir, "a", {83000}, {60000});
  BOOST_TEST(run_script({"compare", a, dir.file("nowhere")}).exit_code == 2);
  BOOST_TEST(run_script({"compare", a}).exit_code == 2);
  BOOST_TEST(run_script({"compare", a, a, "--threshold", "lots"}).exit_code == 2);
}

BOOST_AUTO_TEST_CASE(folders_without_a_common_row_are_a_usage_error) {
  TempDir dir;
  const auto a = results_folder(dir, "a", {83000}, {60000});
  const std::string b = dir.file("b");
  fs::create_directories(b);
  std::ofstream(b + "/runs.tsv") << kHeader << row("cold-storm", "gateway", 1, 14000, 200000);
  BOOST_TEST(run_script({"compare", a, b}).exit_code == 2);
}

BOOST_AUTO_TEST_SUITE_END()

// One real run: the gateway and the constant server on hot-hits for 1 s each. Registered as its
// own ctest test, which reports "skipped" (exit 77) when a tool the script needs is absent.
BOOST_AUTO_TEST_SUITE(real_run)

BOOST_AUTO_TEST_CASE(writes_one_folder_and_leaves_tracked_files_alone) {
  for (const char* tool : {"redis-server", "redis-cli", "curl", "taskset"}) {
    if (!on_path(tool)) {
      std::cout << "skipped: " << tool << " is not installed (deploy/install-deps.sh)" << std::endl;
      std::_Exit(77);
    }
  }
  const bool gnuplot = on_path("gnuplot");
  const auto before = tracked_state();
  std::error_code ec;
  const auto results_before = hot_hits_folders();

  TempDir dir;
  const std::string out = dir.file("run");  // does not exist yet: run.sh creates it
  const std::string build_dir = fs::path(binary_dir()).parent_path().string();
  const Result r = run_script(
      {"hot-hits", "--systems", "gateway,constant", "--duration", "1s", "--warmup", "200ms",
       "--reps", "1", "--no-build", "--no-install", "--build-dir", build_dir, "--out", out},
      150s);
  BOOST_TEST_REQUIRE(r.exit_code == 0);

  for (const char* file :
       {"runs.tsv", "summary.md", "report.md", "scenarios.tsv", "throughput.dat", "upstream.dat",
        "latency-hot-hits.dat", "json/hot-hits-gateway-1.json", "json/hot-hits-constant-1.json"}) {
    BOOST_TEST(fs::is_regular_file(out + "/" + file), file);
  }
  if (gnuplot) {
    for (const char* file : {"throughput.png", "latency-hot-hits.png"}) {
      BOOST_TEST(fs::is_regular_file(out + "/" + file), file);
    }
  }

  const auto runs = lines_of(read_file(out + "/runs.tsv"));
  BOOST_TEST_REQUIRE(runs.size() == 3u);
  const auto header = fields_of(runs[0]);
  BOOST_TEST(header.front() == "scenario");
  BOOST_TEST_REQUIRE(header.size() == 25u);
  BOOST_TEST(header[19] == "exit");
  BOOST_TEST(header[20] == "visitors_p99_us");
  BOOST_TEST(header[23] == "walker_p99_us");
  BOOST_TEST(header.back() == "server_cpu_ms_per_1k");
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const auto fields = fields_of(runs[i]);
    BOOST_TEST_REQUIRE(fields.size() == header.size());
    BOOST_TEST(fields[0] == "hot-hits");
    BOOST_TEST(fields[2] == "1");
    BOOST_TEST(fields[19] == "0");
    // No walker in hot-hits: every answer is a visitor's.
    BOOST_TEST(std::atof(fields[20].c_str()) > 0.0, "visitors' p99 of " << fields[1]);
    BOOST_TEST(fields[21] == "0");
    BOOST_TEST(fields[23] == "-");
    // The server worked over the measured period: some CPU time per 1,000 answers.
    BOOST_TEST(std::atof(fields.back().c_str()) > 0.0, "server CPU of " << fields[1]);
    BOOST_TEST(std::atof(fields[3].c_str()) > 0.0, "req/s of " << fields[1]);
  }
  BOOST_TEST(fields_of(runs[1])[1] == "gateway");
  BOOST_TEST(fields_of(runs[2])[1] == "constant");
  BOOST_TEST(read_file(out + "/report.md").find("The constant reference serves bodies") !=
             std::string::npos);

  // --out was the only place written: no folder under bench/results/, no tracked file changed.
  BOOST_TEST(hot_hits_folders() == results_before);
  if (before) BOOST_TEST(*tracked_state() == *before);

  // The folder compares with itself: same figures, no regression.
  BOOST_TEST(run_script({"compare", out, out}).exit_code == 0);
}

BOOST_AUTO_TEST_SUITE_END()

// Two minutes of the soak (bench/run.sh soak) with every fault compressed into them: two Redis
// SIGKILLs, an upstream outage, SIGHUPs. The soak judges itself (growth, canaries, the quota
// counter against the stub's count) and exits 0 only when all held; this checks it ran the whole
// schedule and wrote its figures. Its own ctest test, skipped (77) when a tool is absent.
BOOST_AUTO_TEST_SUITE(soak)

BOOST_AUTO_TEST_CASE(two_minutes_under_every_fault_pass_and_leave_figures) {
  for (const char* tool : {"redis-server", "redis-cli", "curl"}) {
    if (!on_path(tool)) {
      std::cout << "skipped: " << tool << " is not installed (deploy/install-deps.sh)" << std::endl;
      std::_Exit(77);
    }
  }
  TempDir dir;
  const std::string out = dir.file("soak");
  const std::string build_dir = fs::path(binary_dir()).parent_path().string();
  // A sanitizer build's quarantine would count as growth: keep it small for this run.
  std::map<std::string, std::string> env;
  if (const char* asan = std::getenv("ASAN_OPTIONS")) {
    env["ASAN_OPTIONS"] = std::string(asan) + ":quarantine_size_mb=16";
  }
  ChildProcess child({"bash", kRunScript, "soak", "--duration", "2m", "--rate", "200", "--settle",
                      "30s", "--redis-every", "40s", "--redis-down-for", "5s", "--outage-every",
                      "50s", "--outage-for", "10s", "--sighup-every", "15s", "--sample-every", "5s",
                      "--quiet", "20s", "--no-build", "--no-install", "--build-dir", build_dir,
                      "--out", out},
                     env);
  const int status = child.wait_exit(300s);
  BOOST_TEST_MESSAGE(child.output());
  BOOST_TEST_REQUIRE((status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0),
                     "the soak failed:\n" << child.output());

  const std::string summary = read_file(out + "/summary.md");
  BOOST_TEST(summary.find("## Verdict: passed") != std::string::npos);
  const std::string faults = read_file(out + "/faults.tsv");
  for (const char* fault : {"redis-server SIGKILLed", "redis-server restarted",
                            "upstream outage", "upstream back", "SIGHUP to both gateways"}) {
    BOOST_TEST(faults.find(fault) != std::string::npos, fault);
  }
  // Minutes 0 and 1 (and perhaps a last partial one), each with both instances' figures.
  const auto minutes = lines_of(read_file(out + "/minutes.tsv"));
  BOOST_TEST_REQUIRE(minutes.size() >= 3u);
  for (std::size_t i = 1; i < minutes.size(); ++i) {
    const auto fields = fields_of(minutes[i]);
    BOOST_TEST_REQUIRE(fields.size() == 10u);
    BOOST_TEST(std::atof(fields[1].c_str()) > 0.0, "RSS less cache, minute " << fields[0]);
    BOOST_TEST(std::atoi(fields[3].c_str()) > 0, "fds, minute " << fields[0]);
  }
  // Canaries were asked on both instances all along.
  const auto canaries = lines_of(read_file(out + "/canaries.tsv"));
  BOOST_TEST(canaries.size() > 100u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // run_script_test
