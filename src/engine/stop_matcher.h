#pragma once
// Stop strings on decoded text. Text is released only when no stop string
// can still begin inside it, so a stop string split across tokens never
// leaks into a stream; once one matches, the text before it is final.
#include <string>
#include <vector>

namespace mlx_cpp {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Adds text; returns what is now safe to emit.
  std::string add(const std::string& text);
  // Releases held-back text at the end of generation (no match happened).
  std::string flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool matched_ = false;
};

}  // namespace mlx_cpp
