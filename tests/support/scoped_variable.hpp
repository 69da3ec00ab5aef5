#pragma once
// Sets an environment variable for a scope (a fresh HOME, EXE_SSH_KNOWN_HOSTS), then puts back
// what was there.

#include <cstdlib>
#include <optional>
#include <string>

namespace exedev::test_support {

class ScopedVariable {
 public:
  /// nullopt unsets the variable for the scope.
  ScopedVariable(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~ScopedVariable() {
    if (saved_) ::setenv(name_, saved_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace exedev::test_support
