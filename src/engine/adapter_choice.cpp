#include "engine/adapter_choice.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"

namespace mlx_cpp {

std::vector<AdapterChoice> parse_adapter_stack(const std::string& text) {
  std::vector<AdapterChoice> choices;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find('+', start), text.size());
    auto part = text.substr(start, end - start);
    AdapterChoice choice;
    if (const auto star = part.find('*'); star != std::string::npos) {
      const auto weight = part.substr(star + 1);
      std::size_t used = 0;
      try {
        choice.weight = std::stof(weight, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (weight.empty() || used != weight.size() || !std::isfinite(choice.weight))
        throw Error("adapter stack \"" + text + "\": \"" + weight + "\" is not a weight");
      part = part.substr(0, star);
    }
    if (part.empty()) throw Error("adapter stack \"" + text + "\" has an empty adapter name");
    choice.name = part;
    choices.push_back(choice);
    start = end + 1;
  }
  return choices;
}

}  // namespace mlx_cpp
