#include "tools/redaction.hpp"

#include "common/utf8.hpp"

#include <algorithm>
#include <stdexcept>

namespace exedev::tools::detail {

Redaction::Redaction(std::vector<std::string> values, std::function<std::string(std::string)> hook)
    : values_(std::move(values)), hook_(std::move(hook)) {
  for (const auto& value : values_) {
    if (value.empty()) throw std::invalid_argument("redacted_values must not contain an empty string.");
    // The value itself stays out of the message: it is a secret.
    if (!exedev::detail::is_valid_utf8(value)) throw std::invalid_argument("redacted_values must be UTF-8 text.");
  }
}

std::string Redaction::apply(std::string text) const {
  if (empty()) return text;
  std::size_t stopped_at = 0;
  return hooked(replace(text, true, stopped_at));
}

std::string Redaction::replace(std::string_view text, bool final, std::size_t& stopped_at) const {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const auto rest = text.substr(at);
    // The longest value that matches here, and the longest one this rest may still become.
    std::size_t matched = 0;
    std::size_t may_become = 0;
    for (const auto& value : values_) {
      if (rest.starts_with(value)) {
        matched = std::max(matched, value.size());
      } else if (!final && std::string_view(value).starts_with(rest)) {
        may_become = std::max(may_become, value.size());
      }
    }
    if (may_become > matched) break;  // held back until more text says which
    if (matched > 0) {
      out += kRedactedMarker;
      at += matched;
    } else {
      out += text[at];
      ++at;
    }
  }
  stopped_at = at;
  return out;
}

std::string Redaction::hooked(std::string text) const { return hook_ ? hook_(std::move(text)) : text; }

RedactingStream::RedactingStream(std::shared_ptr<const Redaction> redaction) : redaction_(std::move(redaction)) {}

std::string RedactingStream::feed(std::string_view piece) {
  if (redaction_->empty()) return std::string(piece);
  pending_ += piece;
  std::size_t stopped_at = 0;
  auto text = redaction_->replace(pending_, false, stopped_at);
  pending_.erase(0, stopped_at);
  // An empty piece (everything held back) is not shown to the hook: there is nothing to see.
  return text.empty() ? text : redaction_->hooked(std::move(text));
}

std::string RedactingStream::finish() {
  if (redaction_->empty()) return {};
  auto held = std::move(pending_);
  pending_.clear();
  return held.empty() ? held : redaction_->apply(std::move(held));
}

RedactedOutput::RedactedOutput(std::shared_ptr<const Redaction> redaction, std::function<void(std::string_view)> on_output)
    : redacting_(on_output && !redaction->empty()) {
  shared_ = std::make_shared<Shared>(Shared{std::move(on_output), RedactingStream(std::move(redaction))});
}

std::function<void(std::string_view)> RedactedOutput::callback() const {
  if (!redacting_) return shared_->on_output;
  return [shared = shared_](std::string_view piece) {
    const auto text = shared->stream.feed(piece);
    if (!text.empty()) shared->on_output(text);
  };
}

void RedactedOutput::finish() {
  if (!redacting_) return;
  const auto text = shared_->stream.finish();
  if (!text.empty()) shared_->on_output(text);
}

}  // namespace exedev::tools::detail
