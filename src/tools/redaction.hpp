#pragma once
// Redaction of what the Shell tools show the model (internal, sans-IO): ShellOptions'
// redacted_values replaced by a marker, then its redact hook. Whole texts (a result) are
// redacted at once; text that arrives in pieces (streamed output, a session read after read) by
// a RedactingStream, which holds back a piece's end that may begin a value until the next piece
// says whether it does, so that a value split between pieces is redacted too.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::tools::detail {

/// What stands for a redacted value.
inline constexpr std::string_view kRedactedMarker = "[redacted]";

class Redaction {
 public:
  /// No redaction.
  Redaction() = default;
  /// Throws std::invalid_argument for an empty value or one that is not UTF-8 (tool output is
  /// UTF-8 text: such a value could never match).
  Redaction(std::vector<std::string> values, std::function<std::string(std::string)> hook);

  /// Whether this redacts nothing (no values, no hook).
  [[nodiscard]] bool empty() const noexcept { return values_.empty() && !hook_; }
  /// `text` with every value replaced, then through the hook.
  [[nodiscard]] std::string apply(std::string text) const;

 private:
  friend class RedactingStream;
  /// `text` with every value replaced, scanning from the left (at a position the longest value
  /// that matches there wins). Unless `final`, the scan stops where the rest of `text` is a
  /// proper prefix of a value and returns where, so the caller can hold that rest back.
  [[nodiscard]] std::string replace(std::string_view text, bool final, std::size_t& stopped_at) const;
  [[nodiscard]] std::string hooked(std::string text) const;

  std::vector<std::string> values_;
  std::function<std::string(std::string)> hook_;
};

/// Redacts text that arrives in pieces. Hold a value that can begin in one piece and end in
/// the next: at most the longest value's length less one byte waits.
class RedactingStream {
 public:
  /// `redaction` must not be null (an empty Redaction redacts nothing).
  explicit RedactingStream(std::shared_ptr<const Redaction> redaction = std::make_shared<const Redaction>());

  /// The redacted text of `piece` after what came before, less the end that may begin a value.
  [[nodiscard]] std::string feed(std::string_view piece);
  /// What is still held back, redacted; the stream starts over.
  [[nodiscard]] std::string finish();
  /// How many bytes are held back now.
  [[nodiscard]] std::size_t held_back() const noexcept { return pending_.size(); }

 private:
  std::shared_ptr<const Redaction> redaction_;
  std::string pending_;
};

/// A tool call's ToolCallContext::on_output through a RedactingStream of its own.
class RedactedOutput {
 public:
  /// `redaction` must not be null.
  RedactedOutput(std::shared_ptr<const Redaction> redaction, std::function<void(std::string_view)> on_output);

  /// What to hand on as the call's on_output: empty where there is none, `on_output` itself
  /// where nothing is redacted. It may outlive this object.
  [[nodiscard]] std::function<void(std::string_view)> callback() const;
  /// Passes on what the stream still holds back (the call's output has ended).
  void finish();

 private:
  struct Shared {
    std::function<void(std::string_view)> on_output;
    RedactingStream stream;
  };
  std::shared_ptr<Shared> shared_;
  bool redacting_ = false;
};

}  // namespace exedev::tools::detail
