// Runs a fuzz target over files instead of under libFuzzer, so the regular (GCC) build replays
// the committed corpus as an ordinary test: `WG_FUZZ_TARGET=<target> wg_fuzz_replay
// FILE_OR_DIR...`. Exits non-zero when no input was found; a failed invariant aborts, as it
// does under libFuzzer.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy in its own allocation, so a read past the end is a real overflow under ASan.
  const std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
  return LLVMFuzzerTestOneInput(input.data(), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      files.push_back(arg);
    }
    for (const auto& file : files) {
      run_file(file);
      ++inputs;
    }
  }
  // The empty input too: it is the one every target must handle.
  LLVMFuzzerTestOneInput(nullptr, 0);
  std::printf("replayed %d inputs\n", inputs);
  return inputs > 0 ? 0 : 1;
}
