// Kimi K2: <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
// <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>.
// The text before the argument marker is the call's id; its templates render
// that id back into the conversation, so it is kept as the call's id, and
// the name is what lies between "functions." and the id's last ':'.
#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

constexpr std::string_view kSectionBegin = "<|tool_calls_section_begin|>";
constexpr std::string_view kSectionEnd = "<|tool_calls_section_end|>";
constexpr std::string_view kCallBegin = "<|tool_call_begin|>";
constexpr std::string_view kArgumentBegin = "<|tool_call_argument_begin|>";
constexpr std::string_view kCallEnd = "<|tool_call_end|>";

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

// The name inside an id "functions.NAME:INDEX"; ids without the prefix or
// the index (which the model sometimes drops) are the name as they stand.
std::string name_of_id(std::string_view id) {
  if (id.starts_with("functions.")) id.remove_prefix(std::string_view("functions.").size());
  const size_t colon = id.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < id.size() &&
      id.find_first_not_of("0123456789", colon + 1) == std::string_view::npos)
    id = id.substr(0, colon);
  return std::string(id);
}

struct Arguments {
  std::string text;
  bool closed = false;
  size_t end = 0;  // closed: one past the call's end marker
};

// The arguments from text[begin..] to the call's end marker: the JSON value
// written there, or (when it is not JSON) the text as written. While the
// marker has not come, trailing whitespace and a partial marker are held,
// so that what is shown is always a prefix of the final arguments.
Arguments read_arguments(std::string_view text, size_t begin) {
  Arguments arguments;
  begin = json_scan::skip_space(text, begin);
  size_t limit = text.find(kCallEnd, begin);
  if (limit != std::string_view::npos) {
    arguments.closed = true;
    arguments.end = limit + kCallEnd.size();
  } else {
    const RegionStart partial = find_marker(text, begin, kCallEnd);
    limit = partial.status == RegionStart::Status::partial ? partial.begin : text.size();
  }
  const std::string_view written = text.substr(0, limit);
  const auto value = json_scan::value_extent(written, begin, arguments.closed);
  size_t end = limit;
  if (begin < limit && (written[begin] == '{' || written[begin] == '[') &&
      value.status == json_scan::Status::complete)
    end = value.end;
  while (end > begin && json_scan::is_space(written[end - 1])) --end;
  arguments.text = std::string(written.substr(begin, end - begin));
  if (arguments.closed && arguments.text.empty()) arguments.text = "{}";
  return arguments;
}

class KimiK2Format : public RegionFormat {
 public:
  std::string_view name() const override { return "kimi_k2"; }
  bool renders(std::string_view rendered) const override {
    return rendered.find(kSectionBegin) != std::string_view::npos &&
           rendered.find(kCallBegin) != std::string_view::npos;
  }
  std::vector<std::string> marker_tokens() const override {
    return {std::string(kSectionBegin), std::string(kSectionEnd), std::string(kCallBegin),
            std::string(kArgumentBegin), std::string(kCallEnd)};
  }
  // The section, and in it each call: its id functions.NAME:INDEX, then
  // the arguments.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence({marker(std::string(kCallBegin)), text("functions." + tool.name + ":"),
                       pattern("[0-9]{1,3}"), marker(std::string(kArgumentBegin)),
                       arguments(tool.parameters), marker(std::string(kCallEnd))});
    };
    return sequence({marker(std::string(kSectionBegin)),
                     calls(any_tool(forcing.tools, call), nullptr, forcing.several),
                     marker(std::string(kSectionEnd))});
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    return earliest(find_marker(text, from, kSectionBegin), find_marker(text, from, kCallBegin));
  }

  // One call, with the section's opening marker before it (first call) and
  // its closing marker after it (last call) where they are written.
  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext&) const override {
    Region undecided;  // rejected at the end; open (held) while more may come
    if (!at_end) undecided.status = Region::Status::open;
    size_t position = begin;
    bool in_section = false;
    if (text.compare(position, kSectionBegin.size(), kSectionBegin) == 0) {
      position = json_scan::skip_space(text, position + kSectionBegin.size());
      in_section = true;
    }
    const auto call_begin = starts_with(text, position, kCallBegin);
    if (!call_begin.has_value()) return undecided;
    if (*call_begin)
      position += kCallBegin.size();
    else if (!in_section)
      return {};
    // Inside a section the call's own opening marker may be missing (as
    // mlx-lm allows): the id then starts right away.
    position = json_scan::skip_space(text, position);
    const size_t id_begin = position;
    while (position < text.size() && !json_scan::is_space(text[position]) && text[position] != '<')
      ++position;
    const size_t id_end = position;
    position = json_scan::skip_space(text, position);
    const auto argument_begin = starts_with(text, position, kArgumentBegin);
    if (!argument_begin.has_value()) return undecided;
    if (!*argument_begin || id_end == id_begin) return {};
    const std::string id(text.substr(id_begin, id_end - id_begin));
    std::string name = name_of_id(id);
    if (name.empty()) return {};

    Arguments arguments = read_arguments(text, position + kArgumentBegin.size());
    Region region;
    region.pieces.push_back(
        call_piece(std::move(name), std::move(arguments.text), arguments.closed || at_end, id));
    if (!arguments.closed) {
      region.status = at_end ? Region::Status::closed : Region::Status::open;
      region.end = text.size();
      return region;
    }
    return finish_section(text, arguments.end, at_end, std::move(region));
  }

 private:
  // After a call: the section's closing marker, if it follows.
  static Region finish_section(std::string_view text, size_t position, bool at_end, Region region) {
    const size_t next = json_scan::skip_space(text, position);
    const auto section_end = starts_with(text, next, kSectionEnd);
    if (!section_end.has_value() && !at_end) {
      region.status = Region::Status::open;
      return region;
    }
    region.status = Region::Status::closed;
    region.end = section_end.value_or(false) ? next + kSectionEnd.size() : position;
    return region;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_kimi_k2_format() {
  return std::make_unique<KimiK2Format>();
}

}  // namespace mlx_cpp::chat
