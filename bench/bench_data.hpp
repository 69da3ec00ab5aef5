#pragma once
// Data the benchmarks move: text that compresses about as well as real source code.

#include <iterator>
#include <random>
#include <string>

// C++-like lines with varying identifiers and numbers: compresses about as well as real code.
inline std::string source_text(std::size_t size, std::uint64_t seed = 11) {
  std::mt19937_64 engine{seed};
  const char* words[] = {"const", "auto", "return", "std::string", "value", "co_await", "if", "for", "options",
                         "result", "static_cast<int>", "namespace", "client", "request", "// why:"};
  std::string text;
  while (text.size() < size) {
    text += std::string(2 * (engine() % 4), ' ');
    for (int i = 0, n = 3 + static_cast<int>(engine() % 6); i < n; ++i) {
      text += words[engine() % std::size(words)];
      text += (engine() % 3 == 0) ? "_" + std::to_string(engine() % 1000) + " " : " ";
    }
    text += ";\n";
  }
  text.resize(size);
  return text;
}
