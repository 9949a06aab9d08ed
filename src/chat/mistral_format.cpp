// Mistral: calls follow the [TOOL_CALLS] token, in one of two forms.
//   Older templates (v3 to v7: Mistral 7B v0.3, Nemo, Small 3.1) write a JSON
//   list: [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "..."}, ...]
//   Newer ones write the name, then the arguments, one [TOOL_CALLS] a call:
//   [TOOL_CALLS]f[ARGS]{...} or [TOOL_CALLS]f[CALL_ID]abc123XYZ[ARGS]{...}
// Read as mlx-lm's mistral parser reads them, except that text around the
// calls is kept as content rather than dropped, and the calls stream: a
// list's elements one by one, each name first, then its arguments.
#include <optional>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using json_scan::ObjectCall;
using State = ObjectCall::State;

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

// mlx-lm reads names and ids as [\w-]+.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

size_t name_end(std::string_view text, size_t position) {
  while (position < text.size() && is_name_char(text[position])) ++position;
  return position;
}

Region open(Region region) {
  region.status = Region::Status::open;
  return region;
}

Region closed(Region region, size_t end) {
  region.status = Region::Status::closed;
  region.end = end;
  return region;
}

// mlx-lm gives an element that names a function but has no arguments the
// arguments {}; read_object_call wants both, so such an element is read
// again once whole.
std::optional<std::string> name_without_arguments(std::string_view text, size_t begin, size_t end) {
  auto element = nlohmann::json::parse(text.substr(begin, end - begin), nullptr, false);
  if (!element.is_object() || element.contains("arguments")) return std::nullopt;
  auto name = element.find("name");
  if (name == element.end() || !name->is_string() || name->get<std::string>().empty())
    return std::nullopt;
  return name->get<std::string>();
}

class MistralFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "mistral"; }
  bool renders(std::string_view rendered) const override {
    return rendered.find(kToolCalls) != std::string_view::npos;
  }
  std::vector<std::string> marker_tokens() const override {
    return {std::string(kToolCalls), std::string(kArgs), std::string(kCallId)};
  }
  CallIdStyle id_style() const override { return CallIdStyle::nine_letters; }
  // The form the template writes: [TOOL_CALLS]NAME[ARGS]{...} for each
  // call, or [TOOL_CALLS][{"name": "NAME", "arguments": {...}}, ...].
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    const bool named_form = forcing.rendered_call.find(kArgs) != std::string_view::npos;
    auto call = [&](const ForcedTool& tool) {
      if (named_form)
        return sequence({marker(std::string(kToolCalls)), text(tool.name),
                         marker(std::string(kArgs)), arguments(tool.parameters)});
      return sequence({text("{\"name\": \"" + json_string_body(tool.name) + "\", \"arguments\": "),
                       arguments(tool.parameters), text("}")});
    };
    if (named_form) return calls(any_tool(forcing.tools, call), nullptr, forcing.several);
    return sequence({marker(std::string(kToolCalls)), text("["),
                     calls(any_tool(forcing.tools, call), text(", "), forcing.several), text("]")});
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    return find_marker(text, from, kToolCalls);
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext&) const override {
    const size_t position = json_scan::skip_space(text, begin + kToolCalls.size());
    if (position >= text.size()) return at_end ? Region{} : open({});
    if (text[position] == '[') return read_list(text, position, at_end);
    return read_named(text, position, at_end);
  }

 private:
  // [{"name": ..., "arguments": ...}, ...]. Elements after one that is not a
  // call are content (the calls before it have been shown already).
  static Region read_list(std::string_view text, size_t bracket, bool at_end) {
    Region region;
    size_t position = json_scan::skip_space(text, bracket + 1);
    size_t calls_end = bracket;
    while (position < text.size()) {
      if (text[position] == ']') return closed(std::move(region), position + 1);
      ObjectCall call = json_scan::read_object_call(text, position, at_end);
      // read_object_call leaves an object cut short inside its arguments open,
      // even at the end; at the end it is a call as it stands.
      if (at_end && call.state == State::open) {
        call.state = State::closed;
        call.end = text.size();
      }
      if (call.state == State::undecided) return open(std::move(region));
      if (call.state == State::not_a_call) {
        const auto element = json_scan::value_extent(text, position, at_end);
        std::optional<std::string> name;
        if (element.status == json_scan::Status::complete)
          name = name_without_arguments(text, position, element.end);
        if (!name && element.status == json_scan::Status::incomplete && !at_end)
          return open(std::move(region));
        if (!name) return region.pieces.empty() ? Region{} : closed(std::move(region), calls_end);
        call = {State::closed, *name, "{}", element.end};
      }
      region.pieces.push_back(call_piece(call.name, call.arguments, call.state == State::closed));
      if (call.state == State::open) return open(std::move(region));
      calls_end = call.end;
      position = json_scan::skip_space(text, call.end);
      if (position < text.size() && text[position] == ',')
        position = json_scan::skip_space(text, position + 1);
      else if (position < text.size() && text[position] != ']')
        return closed(std::move(region), calls_end);
    }
    // The text ends inside the list.
    if (!at_end) return open(std::move(region));
    return region.pieces.empty() ? Region{} : closed(std::move(region), calls_end);
  }

  // f[ARGS]{...} or f[CALL_ID]id[ARGS]{...}. The call is certain once
  // [ARGS] is read; its arguments then stream as written.
  static Region read_named(std::string_view text, size_t position, bool at_end) {
    const Region undecided = at_end ? Region{} : open({});
    const size_t name_stop = name_end(text, position);
    if (name_stop == text.size()) return undecided;
    if (name_stop == position) return {};
    const std::string name(text.substr(position, name_stop - position));
    position = json_scan::skip_space(text, name_stop);
    std::string id;
    const auto has_id = starts_with(text, position, kCallId);
    if (!has_id.has_value()) return undecided;
    if (*has_id) {
      const size_t id_begin = json_scan::skip_space(text, position + kCallId.size());
      const size_t id_stop = name_end(text, id_begin);
      if (id_stop == text.size()) return undecided;
      id = std::string(text.substr(id_begin, id_stop - id_begin));
      position = json_scan::skip_space(text, id_stop);
    }
    const auto has_args = starts_with(text, position, kArgs);
    if (!has_args.has_value()) return undecided;
    if (!*has_args) return {};
    const size_t value = json_scan::skip_space(text, position + kArgs.size());
    return read_arguments(text, value, at_end, name, id);
  }

  static Region read_arguments(std::string_view text, size_t value, bool at_end,
                               const std::string& name, const std::string& id) {
    Region region;
    auto add = [&](std::string arguments, bool is_closed) {
      region.pieces.push_back(call_piece(name, std::move(arguments), is_closed, id));
    };
    if (value >= text.size()) {
      add(at_end ? "{}" : "", at_end);
      return at_end ? closed(std::move(region), text.size()) : open(std::move(region));
    }
    const auto extent = json_scan::value_extent(text, value, at_end);
    if (text[value] == '{') {
      // An object streams; where it turns out malformed it ends there, as
      // written so far (what was shown cannot be taken back).
      std::string written(text.substr(value, extent.end - value));
      if (extent.status == json_scan::Status::incomplete && !at_end) {
        add(std::move(written), false);
        return open(std::move(region));
      }
      add(std::move(written), true);
      return closed(std::move(region), extent.end);
    }
    // Any other value is shown once whole.
    if (extent.status == json_scan::Status::incomplete && !at_end) {
      add("", false);
      return open(std::move(region));
    }
    const auto literal = text.substr(value, extent.end - value);
    if (extent.status == json_scan::Status::complete && json_scan::is_valid(literal)) {
      add(std::string(literal), true);
      return closed(std::move(region), extent.end);
    }
    add("{}", true);
    return closed(std::move(region), value);
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_mistral_format() {
  return std::make_unique<MistralFormat>();
}

}  // namespace mlx_cpp::chat
