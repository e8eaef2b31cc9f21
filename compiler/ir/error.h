// Errors in the compiler are exceptions carrying a message that names the
// model's node and op where one is involved. nanoc's main catches them.
#pragma once

#include <stdexcept>
#include <string>

namespace nanoc {

class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace nanoc
