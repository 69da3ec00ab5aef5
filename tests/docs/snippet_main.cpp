// Runs every docs snippet (extracted by extract_snippets.cmake), each against a fresh emulator
// and in a fresh temporary working directory. Any exception fails it; every snippet runs.
#include "snippet_prelude.hpp"

#include <exedev/emulator/emulator.hpp>
#include <exedev/testing/run.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>

int main() {
  int failures = 0;
  const auto home = std::filesystem::current_path();
  for (const Snippet& snippet : snippets) {
    try {
      const auto directory = std::filesystem::temp_directory_path() / ("exedev-snippet-" + std::to_string(::getpid()));
      std::filesystem::create_directories(directory);
      std::filesystem::current_path(directory);
      {
        exedev::emulator::Emulator emulator;
        ::setenv("EXE_BASE_URL", emulator.url().c_str(), 1);
        ::setenv("EXE_TOKEN", emulator.token().c_str(), 1);
        ::setenv("EXE_CA_FILE", emulator.ca_file().c_str(), 1);
        exedev::testing::run(snippet.run);
      }
      std::filesystem::current_path(home);
      std::filesystem::remove_all(directory);
      std::cout << "ok     " << snippet.where << "\n";
    } catch (const std::exception& error) {
      std::filesystem::current_path(home);
      std::cout << "FAILED " << snippet.where << ": " << error.what() << "\n";
      ++failures;
    }
  }
  std::cout << snippets.size() - static_cast<std::size_t>(failures) << " of " << snippets.size() << " snippets ran\n";
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
