// Hermes and Qwen2.5 / Qwen3: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
// Small models given this template often write the call without its tags,
// as a fenced ```json block or a bare object at the start of a line,
// sometimes in doubled braces; those are read as calls too when they name
// an offered tool (text naming no tool stays content).
#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using json_scan::ObjectCall;
using State = ObjectCall::State;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFence = "```";

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

class HermesFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "hermes"; }
  // <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>, a line between calls.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence(
          {marker(std::string(kOpen)),
           text("\n{\"name\": \"" + json_string_body(tool.name) + "\", \"arguments\": "),
           arguments(tool.parameters), text("}\n"), marker(std::string(kClose))});
    };
    return calls(any_tool(forcing.tools, call), text("\n"), forcing.several);
  }
  bool renders(std::string_view rendered) const override {
    auto open = rendered.find(kOpen);
    return open != std::string_view::npos &&
           rendered.find("\"name\"", open) != std::string_view::npos;
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    RegionStart start = earliest(find_marker(text, from, kOpen), find_marker(text, from, kFence));
    for (size_t i = from;
         i < text.size() && (start.status == RegionStart::Status::none || i < start.begin); ++i) {
      if (text[i] == '{' && (i == 0 || text[i - 1] == '\n')) return {RegionStart::Status::found, i};
    }
    return start;
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext& context) const override {
    if (text.compare(begin, kOpen.size(), kOpen) == 0)
      return read_tagged(text, begin + kOpen.size(), at_end);
    if (text.compare(begin, kFence.size(), kFence) == 0)
      return read_fenced(text, begin + kFence.size(), at_end, context);
    return read_bare(text, begin, at_end, context, "");
  }

 private:
  // <tool_call> {call} </tool_call>; a missing closing tag is forgiven.
  Region read_tagged(std::string_view text, size_t position, bool at_end) const {
    position = json_scan::skip_space(text, position);
    bool doubled = text.compare(position, 2, "{{") == 0;
    auto call = json_scan::read_object_call(text, position + (doubled ? 1 : 0), at_end);
    return finish_call(text, call, at_end, doubled, kClose);
  }

  Region read_fenced(std::string_view text, size_t position, bool at_end,
                     const ToolContext& context) const {
    auto json_tag = starts_with(text, position, "json");
    if (!json_tag.has_value() && !at_end) return {Region::Status::open};
    if (json_tag.value_or(false)) position += 4;
    const size_t object = json_scan::skip_space(text, position);
    if (object == text.size()) return at_end ? Region{} : Region{Region::Status::open};
    if (text[object] != '{') return {};
    return read_bare(text, object, at_end, context, kFence);
  }

  Region read_bare(std::string_view text, size_t position, bool at_end, const ToolContext& context,
                   std::string_view closer) const {
    bool doubled = text.compare(position, 2, "{{") == 0;
    if (!doubled && position + 1 >= text.size() && !at_end) return {Region::Status::open};
    auto call = json_scan::read_object_call(text, position + (doubled ? 1 : 0), at_end);
    if (!call.name.empty() && !context.offers(call.name)) return {};
    return finish_call(text, call, at_end, doubled, closer);
  }

  // After the call object: the doubled brace's twin, then the closer.
  Region finish_call(std::string_view text, const ObjectCall& call, bool at_end, bool doubled,
                     std::string_view closer) const {
    if (call.state == State::not_a_call) return {};
    if (call.state == State::undecided) return {Region::Status::open};
    Region region;
    region.pieces.push_back(call_piece(call.name, call.arguments, call.state == State::closed));
    if (call.state == State::open) {
      region.status = Region::Status::open;
      return region;
    }
    size_t position = json_scan::skip_space(text, call.end);
    if (doubled) {
      auto twin = starts_with(text, position, "}");
      if (!twin.has_value() && !at_end) return open_region(std::move(region));
      if (twin.value_or(false)) position = json_scan::skip_space(text, position + 1);
    }
    if (!closer.empty()) {
      auto closed = starts_with(text, position, closer);
      if (!closed.has_value() && !at_end) return open_region(std::move(region));
      if (closed.value_or(false)) position += closer.size();
    }
    region.status = Region::Status::closed;
    region.end = position;
    return region;
  }

  static Region open_region(Region region) {
    region.status = Region::Status::open;
    return region;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_hermes_format() {
  return std::make_unique<HermesFormat>();
}

}  // namespace mlx_cpp::chat
