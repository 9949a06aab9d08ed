// Llama 3.1 / 3.2 / 3.3 with JSON tool calling: the answer is the call,
// {"name": "f", "parameters": {...}} ("arguments" is seen too), sometimes
// after the <|python_tag|> token, several calls separated by ';' or new lines.
// The template gives the model no tags around a call, so a call is
// recognised only where the model starts one: at the start of the answer,
// after <|python_tag|>, or after a previous call's separator. JSON anywhere
// else (an example in prose, a JSON answer) stays content.
#include <optional>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using json_scan::ObjectCall;
using State = ObjectCall::State;

constexpr std::string_view kPythonTag = "<|python_tag|>";

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

class Llama3JsonFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "llama3_json"; }
  // {"name": "NAME", "parameters": {...}}, "; " between calls.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence({text("{\"name\": \"" + json_string_body(tool.name) + "\", \"parameters\": "),
                       arguments(tool.parameters), text("}")});
    };
    return calls(any_tool(forcing.tools, call), text("; "), forcing.several);
  }

  // The template writes the call as the whole assistant turn, so the
  // rendering is a call object from its first byte (before <|eot_id|>).
  // Templates that wrap the object in tags (Hermes, Phi-4, Nemotron) are
  // not of this family.
  bool renders(std::string_view rendered) const override {
    size_t position = json_scan::skip_space(rendered, 0);
    if (starts_with(rendered, position, kPythonTag).value_or(false))
      position = json_scan::skip_space(rendered, position + kPythonTag.size());
    return json_scan::read_object_call(rendered, position, /*at_end=*/true).state == State::closed;
  }

  std::vector<std::string> marker_tokens() const override { return {std::string(kPythonTag)}; }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    const RegionStart tag = find_marker(text, from, kPythonTag);
    // The start of the answer is the only untagged place a call may begin.
    const size_t first = json_scan::skip_space(text, 0);
    if (first >= from && first < text.size() && text[first] == '{')
      return earliest({RegionStart::Status::found, first}, tag);
    return tag;
  }

  // One or more calls, each optionally after <|python_tag|>, separated by
  // ';' or whitespace. The region ends after the last call (and its ';');
  // whatever follows that is not a call is content.
  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext&) const override {
    Region region;
    size_t position = begin;
    size_t calls_end = begin;
    while (true) {
      auto tagged = starts_with(text, position, kPythonTag);
      if (!tagged.has_value() && !at_end) return open(std::move(region));
      const size_t call_begin = tagged.value_or(false)
                                    ? json_scan::skip_space(text, position + kPythonTag.size())
                                    : position;
      ObjectCall call = json_scan::read_object_call(text, call_begin, at_end);
      // read_object_call leaves an object cut short inside its arguments open,
      // even at the end; at the end it is a call as it stands.
      if (at_end && call.state == State::open) {
        call.state = State::closed;
        call.end = text.size();
      }
      if (at_end && call.state == State::undecided) call.state = State::not_a_call;
      if (call.state == State::not_a_call) return close(std::move(region), calls_end);
      if (call.state == State::undecided) return open(std::move(region));
      region.pieces.push_back(call_piece(call.name, call.arguments, call.state == State::closed));
      if (call.state == State::open) return open(std::move(region));
      calls_end = call.end;
      position = json_scan::skip_space(text, call.end);
      if (position < text.size() && text[position] == ';') {
        calls_end = position + 1;
        position = json_scan::skip_space(text, position + 1);
      }
      // Whether another call follows is unknown until something is written.
      if (position >= text.size())
        return at_end ? close(std::move(region), calls_end) : open(std::move(region));
    }
  }

 private:
  static Region open(Region region) {
    region.status = Region::Status::open;
    return region;
  }
  // A region without a call is not markup after all.
  static Region close(Region region, size_t end) {
    if (region.pieces.empty()) return {};
    region.status = Region::Status::closed;
    region.end = end;
    return region;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_llama3_json_format() {
  return std::make_unique<Llama3JsonFormat>();
}

}  // namespace mlx_cpp::chat
