// Redaction of what the Shell tools show the model, sans-IO: whole texts, texts that arrive in
// pieces split anywhere (a value split between pieces is redacted as if it had come whole), the
// hook, the values refused, and a call's streamed output. (The Shell tools redacting on
// LocalBackend and SandboxBackend: tests/integration/tools/shell_test.cpp and
// shell_sessions_test.cpp.)
#include "tools/redaction.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace exedev::tools::detail;

namespace {

std::shared_ptr<const Redaction> values(std::vector<std::string> list) {
  return std::make_shared<const Redaction>(std::move(list), nullptr);
}

/// Everything a stream makes of `text` cut at `cuts` (sorted offsets), the pieces joined.
std::string streamed(const std::shared_ptr<const Redaction>& redaction, const std::string& text,
                     const std::vector<std::size_t>& cuts) {
  RedactingStream stream(redaction);
  std::string out;
  std::size_t from = 0;
  for (const auto cut : cuts) {
    out += stream.feed(std::string_view(text).substr(from, cut - from));
    from = cut;
  }
  out += stream.feed(std::string_view(text).substr(from));
  return out + stream.finish();
}

}  // namespace

TEST_CASE("redaction: every occurrence replaced, the longest value at a position first", "[unit][tools][redaction]") {
  const auto r = values({"s3cret", "tok", "token-abc"});
  CHECK(r->apply("a s3cret and s3crets") == "a [redacted] and [redacted]s");
  CHECK(r->apply("token-abc token-ab tok") == "[redacted] [redacted]en-ab [redacted]");
  CHECK(r->apply("nothing here") == "nothing here");
  CHECK(r->apply("") == "");
  CHECK(Redaction().apply("s3cret") == "s3cret");
  CHECK(Redaction().empty());
  CHECK_FALSE(r->empty());
  // Overlapping occurrences: the leftmost is taken, what it covers is gone.
  CHECK(values({"abab"})->apply("ababab") == "[redacted]ab");
}

TEST_CASE("redaction: the hook sees the text after the values", "[unit][tools][redaction]") {
  std::vector<std::string> seen;
  const Redaction r({"key"}, [&](std::string text) {
    seen.push_back(text);
    std::replace(text.begin(), text.end(), '7', '#');
    return text;
  });
  CHECK(r.apply("key 1777") == "[redacted] 1###");
  CHECK(seen == std::vector<std::string>{"[redacted] 1777"});
  const Redaction hook_only({}, [](std::string) { return std::string("(hidden)"); });
  CHECK_FALSE(hook_only.empty());
  CHECK(hook_only.apply("anything") == "(hidden)");
}

TEST_CASE("redaction: empty values and values that are not UTF-8 are refused, without echoing them", "[unit][tools][redaction]") {
  CHECK_THROWS_MATCHES(Redaction({"ok", ""}, nullptr), std::invalid_argument,
                       Catch::Message("redacted_values must not contain an empty string."));
  try {
    Redaction({"pass\xffword"}, nullptr);
    FAIL("no std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "redacted_values must be UTF-8 text.");
  }
}

TEST_CASE("redaction: a value split between pieces anywhere is redacted as if it came whole", "[unit][tools][redaction]") {
  const auto r = values({"hunter2", "hunter2-long", "ab"});
  const std::string text = "x hunter2 y hunter2-long z hunter2-lo ab a";
  const auto whole = r->apply(text);
  CHECK(whole == "x [redacted] y [redacted] z [redacted]-lo [redacted] a");
  // Every single cut, then every pair of cuts.
  for (std::size_t i = 0; i <= text.size(); ++i) {
    CHECK(streamed(r, text, {i}) == whole);
    for (std::size_t j = i; j <= text.size(); ++j) REQUIRE(streamed(r, text, {i, j}) == whole);
  }
  // Random texts over a small alphabet (values and near misses are frequent), cut at random.
  std::mt19937 random(42);
  const auto dense = values({"aab", "abab", "ba", "aaaa"});
  for (int round = 0; round < 2000; ++round) {
    std::string sample(random() % 40, 'a');
    for (auto& c : sample) c = "ab"[random() % 2];
    std::vector<std::size_t> cuts;
    for (std::size_t n = random() % 6; n > 0; --n) cuts.push_back(sample.empty() ? 0 : random() % (sample.size() + 1));
    std::sort(cuts.begin(), cuts.end());
    REQUIRE(streamed(dense, sample, cuts) == dense->apply(sample));
  }
}

TEST_CASE("redaction: a stream holds back no more than may begin a value", "[unit][tools][redaction]") {
  RedactingStream stream(values({"hunter2", "hunter2-long"}));
  CHECK(stream.feed("log: hunt") == "log: ");
  CHECK(stream.held_back() == 4);
  // A shorter value matched while a longer one may still come: it waits.
  CHECK(stream.feed("er2") == "");
  CHECK(stream.held_back() == 7);
  CHECK(stream.feed("-lo") == "");
  CHECK(stream.feed("ng, hunter") == "[redacted], ");
  CHECK(stream.held_back() == 6);
  CHECK(stream.feed("!") == "hunter!");
  CHECK(stream.held_back() == 0);
  CHECK(stream.feed("hunter2") == "");
  CHECK(stream.finish() == "[redacted]");  // the end: what was held is whole
  CHECK(stream.held_back() == 0);
  // Without redaction, pieces pass as they come.
  RedactingStream plain;
  CHECK(plain.feed("hunt") == "hunt");
  CHECK(plain.finish().empty());
}

TEST_CASE("redaction: a call's streamed output passes redacted, what waits comes at its end", "[unit][tools][redaction]") {
  std::string seen;
  const std::function<void(std::string_view)> on_output = [&](std::string_view text) { seen += text; };
  RedactedOutput output(values({"s3cret"}), on_output);
  const auto callback = output.callback();
  callback("the s3");
  callback("cret is s");
  CHECK(seen == "the [redacted] is ");
  output.finish();
  CHECK(seen == "the [redacted] is s");
  // No callback: none handed on; nothing to redact: the callback itself.
  CHECK_FALSE(RedactedOutput(values({"s3cret"}), nullptr).callback());
  seen.clear();
  RedactedOutput(std::make_shared<const Redaction>(), on_output).callback()("s3cret");
  CHECK(seen == "s3cret");
}
