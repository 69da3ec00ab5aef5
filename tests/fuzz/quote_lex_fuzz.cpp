// The lobby lexer (the emulator's port of exe.dev's) on any line, and the round trip through
// the client's quoting: the words of a LobbyLine lex back to exactly the words given.
#include "fuzz.hpp"

#include "client/lobby.hpp"
#include "emulator/lexer.hpp"

#include <exedev/client.hpp>
#include <exedev/errors.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using exedev::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = exedev::fuzz::bytes(data, size);
  (void)exedev::emulator::lex(input);

  // The input as words separated by NUL (which no word may contain).
  std::vector<std::string> words;
  std::string word;
  for (const char c : input) {
    if (c == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  words.push_back(word);

  exedev::detail::LobbyLine line("rm");
  std::vector<std::string> sent;
  for (const auto& w : words) {
    try {
      line.word(w, "word");
      sent.push_back(w);
    } catch (const std::invalid_argument&) {
      // empty or not UTF-8: refused before anything is sent, which is the documented outcome
    }
  }
  std::string body;
  try {
    body = line.str();
  } catch (const exedev::BadRequestError&) {
    return 0;  // over the 64 KiB /exec limit: refused locally, the documented outcome
  }
  // The server lexes the trimmed body.
  const auto lexed = exedev::emulator::lex(exedev::emulator::trim_space(body));
  require(!lexed.error, "a quoted line lexes without error");
  std::vector<std::string> expected = {"rm"};
  bool dash = false;
  for (const auto& w : sent) dash = dash || w.front() == '-';
  if (dash) expected.push_back("--");
  expected.insert(expected.end(), sent.begin(), sent.end());
  require(lexed.words == expected, "quote then lex returns the words");
  return 0;
}
