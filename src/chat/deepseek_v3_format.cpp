// DeepSeek V3 / R1 / V3.1 / V3.2. V3 and R1 write
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
//   <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
// V3.1 drops the type and the fence:
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>. The two are told apart by what
// follows the separator (a JSON value, or a name). V3.2 writes DSML markup instead, one parameter
// per tag:
//   <｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n<｜DSML｜parameter name="city"
//   string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>
// where string="false" marks a value written as JSON.
#include <cctype>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSeparator = "<｜tool▁sep｜>";
constexpr std::string_view kFence = "```";

constexpr std::string_view kDsmlCalls = "<｜DSML｜function_calls>";
constexpr std::string_view kDsmlCallsEnd = "</｜DSML｜function_calls>";
constexpr std::string_view kInvoke = "<｜DSML｜invoke";
constexpr std::string_view kInvokeEnd = "</｜DSML｜invoke>";
constexpr std::string_view kParameter = "<｜DSML｜parameter";
constexpr std::string_view kParameterEnd = "</｜DSML｜parameter>";

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

// Skips `word` at text[position] if it is there.
bool skip(std::string_view text, size_t& position, std::string_view word) {
  if (text.compare(position, word.size(), word) != 0) return false;
  position += word.size();
  return true;
}

std::string to_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct Arguments {
  std::string text;
  bool closed = false;
  size_t end = 0;  // closed: one past `end_marker`
};

// The arguments from text[begin..] to `end_marker`: the JSON value written
// there, or (when it is not JSON) the text as written, without the fence
// that closes it. Until the marker comes, trailing whitespace, backticks and
// a partial marker are held, so what is shown is a prefix of the final text.
Arguments read_arguments(std::string_view text, size_t begin, std::string_view end_marker) {
  Arguments arguments;
  begin = json_scan::skip_space(text, begin);
  size_t limit = text.find(end_marker, begin);
  if (limit != std::string_view::npos) {
    arguments.closed = true;
    arguments.end = limit + end_marker.size();
  } else {
    const RegionStart partial = find_marker(text, begin, end_marker);
    limit = partial.status == RegionStart::Status::partial ? partial.begin : text.size();
  }
  const std::string_view written = text.substr(0, limit);
  size_t end = limit;
  if (begin < limit && (written[begin] == '{' || written[begin] == '[')) {
    const auto value = json_scan::value_extent(written, begin, arguments.closed);
    if (value.status == json_scan::Status::complete) end = value.end;
  }
  while (end > begin && (json_scan::is_space(written[end - 1]) || written[end - 1] == '`')) --end;
  arguments.text = std::string(written.substr(begin, end - begin));
  if (arguments.closed && arguments.text.empty()) arguments.text = "{}";
  return arguments;
}

// The attributes of a DSML tag up to its '>': name="value" pairs.
struct Tag {
  enum class Status { complete, undecided, invalid } status = Status::undecided;
  std::vector<std::pair<std::string, std::string>> attributes;
  size_t end = 0;  // complete: one past '>'
  std::string attribute(std::string_view key) const {
    for (const auto& [name, value] : attributes)
      if (name == key) return value;
    return "";
  }
};

Tag read_tag(std::string_view text, size_t position) {
  Tag tag;
  while (true) {
    position = json_scan::skip_space(text, position);
    if (position >= text.size()) return tag;
    if (text[position] == '>') {
      tag.status = Tag::Status::complete;
      tag.end = position + 1;
      return tag;
    }
    const size_t key_begin = position;
    while (position < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[position])) || text[position] == '_'))
      ++position;
    if (position >= text.size()) return tag;
    if (position == key_begin || text.compare(position, 2, "=\"") != 0) {
      if (text.substr(position) != "=") tag.status = Tag::Status::invalid;
      return tag;
    }
    const size_t value_begin = position + 2;
    const size_t value_end = text.find_first_of("\"<>\n", value_begin);
    if (value_end == std::string_view::npos) return tag;
    if (text[value_end] != '"') {
      tag.status = Tag::Status::invalid;
      return tag;
    }
    tag.attributes.emplace_back(text.substr(key_begin, position - key_begin),
                                text.substr(value_begin, value_end - value_begin));
    position = value_end + 1;
  }
}

// A parameter's value as JSON: text for string="true", else the JSON it
// holds (text again when it holds none).
std::string parameter_value(std::string_view value, bool is_string) {
  if (!is_string) {
    const size_t begin = json_scan::skip_space(value, 0);
    size_t end = value.size();
    while (end > begin && json_scan::is_space(value[end - 1])) --end;
    const auto trimmed = value.substr(begin, end - begin);
    if (!trimmed.empty() && json_scan::is_valid(trimmed)) return std::string(trimmed);
  }
  return to_json(std::string(value));
}

class DeepSeekV3Format : public RegionFormat {
 public:
  std::string_view name() const override { return "deepseek_v3"; }
  bool renders(std::string_view rendered) const override {
    return (rendered.find(kCallBegin) != std::string_view::npos &&
            rendered.find(kSeparator) != std::string_view::npos) ||
           rendered.find(kInvoke) != std::string_view::npos;
  }
  std::vector<std::string> marker_tokens() const override {
    // "｜DSML｜" is kept too in case a vocabulary makes it a special token.
    return {std::string(kCallsBegin), std::string(kCallsEnd),  std::string(kCallBegin),
            std::string(kCallEnd),    std::string(kSeparator), "｜DSML｜"};
  }
  // In the variant the template writes: V3.2's DSML invoke (parameters in
  // xgrammar's deepseek_xml style), V3 / R1's typed call with fenced JSON,
  // or V3.1's NAME<｜tool▁sep｜>{...}.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    const auto& rendered = forcing.rendered_call;
    const bool dsml = rendered.find(kInvoke) != std::string_view::npos;
    const bool typed = rendered.find(std::string(kCallBegin) + "function" +
                                     std::string(kSeparator)) != std::string_view::npos;
    auto call = [&](const ForcedTool& tool) {
      if (dsml)
        return sequence({text(std::string(kInvoke) + " name=\"" + tool.name + "\">\n"),
                         arguments(tool.parameters, "deepseek_xml"),
                         text(std::string(kInvokeEnd) + "\n")});
      if (typed)
        return sequence({marker(std::string(kCallBegin)), text("function"),
                         marker(std::string(kSeparator)), text(tool.name + "\n```json\n"),
                         arguments(tool.parameters), text("\n```"), marker(std::string(kCallEnd))});
      return sequence({marker(std::string(kCallBegin)), text(tool.name),
                       marker(std::string(kSeparator)), arguments(tool.parameters),
                       marker(std::string(kCallEnd))});
    };
    auto all = calls(any_tool(forcing.tools, call), nullptr, forcing.several);
    if (dsml)
      return sequence(
          {text(std::string(kDsmlCalls) + "\n"), std::move(all), text(std::string(kDsmlCallsEnd))});
    return sequence(
        {marker(std::string(kCallsBegin)), std::move(all), marker(std::string(kCallsEnd))});
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    RegionStart start =
        earliest(find_marker(text, from, kCallsBegin), find_marker(text, from, kCallBegin));
    start = earliest(start, find_marker(text, from, kDsmlCalls));
    return earliest(start, find_marker(text, from, kInvoke));
  }

  // One call, with the block's opening marker before it (first call) and its
  // closing marker after it (last call) where they are written.
  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext&) const override {
    if (text.compare(begin, kDsmlCalls.size(), kDsmlCalls) == 0 ||
        text.compare(begin, kInvoke.size(), kInvoke) == 0)
      return read_invoke(text, begin, at_end);
    return read_token_call(text, begin, at_end);
  }

 private:
  static Region undecided(bool at_end) {
    Region region;  // rejected at the end; held while more may come
    if (!at_end) region.status = Region::Status::open;
    return region;
  }

  static Region read_token_call(std::string_view text, size_t position, bool at_end) {
    if (skip(text, position, kCallsBegin)) position = json_scan::skip_space(text, position);
    const auto call_begin = starts_with(text, position, kCallBegin);
    if (!call_begin.has_value()) return undecided(at_end);
    if (!*call_begin) return {};
    position = json_scan::skip_space(text, position + kCallBegin.size());
    // The type (V3, R1) or the name (V3.1).
    const size_t header_begin = position;
    while (position < text.size() && !json_scan::is_space(text[position]) && text[position] != '<')
      ++position;
    const std::string header(text.substr(header_begin, position - header_begin));
    position = json_scan::skip_space(text, position);
    const auto separator = starts_with(text, position, kSeparator);
    if (!separator.has_value()) return undecided(at_end);
    if (!*separator || header.empty()) return {};
    position = json_scan::skip_space(text, position + kSeparator.size());
    if (position >= text.size()) return undecided(at_end);

    std::string name = header;
    if (text[position] != '{' && text[position] != '[') {
      // V3 / R1: the name, then the arguments in a ```json fence.
      const size_t name_begin = position;
      while (position < text.size() && !json_scan::is_space(text[position]) &&
             text[position] != '`' && text[position] != '{' && text[position] != '<')
        ++position;
      if (position >= text.size()) return undecided(at_end);
      // A fence right after the separator: the name was written in the
      // type's place (as V3.1 does), unless it is the type itself.
      if (position > name_begin) name = std::string(text.substr(name_begin, position - name_begin));
      if (position == name_begin && name == "function") return {};
      position = json_scan::skip_space(text, position);
      const auto fence = starts_with(text, position, kFence);
      std::optional<bool> json_tag = false;
      if (fence.value_or(false)) {
        position += kFence.size();
        json_tag = starts_with(text, position, "json");
        if (json_tag.value_or(false)) position += 4;
      }
      if ((!fence.has_value() || !json_tag.has_value()) && !at_end) {
        // The fence is still being written: the call is sure, its arguments
        // have not begun.
        Region region;
        region.status = Region::Status::open;
        region.pieces.push_back(call_piece(std::move(name), "", false));
        return region;
      }
    }
    Arguments arguments = read_arguments(text, position, kCallEnd);
    Region region;
    region.pieces.push_back(
        call_piece(std::move(name), std::move(arguments.text), arguments.closed || at_end));
    if (!arguments.closed) {
      region.status = at_end ? Region::Status::closed : Region::Status::open;
      region.end = text.size();
      return region;
    }
    return finish_block(text, arguments.end, at_end, kCallsEnd, std::move(region));
  }

  static Region read_invoke(std::string_view text, size_t position, bool at_end) {
    if (skip(text, position, kDsmlCalls)) position = json_scan::skip_space(text, position);
    const auto invoke = starts_with(text, position, kInvoke);
    if (!invoke.has_value()) return undecided(at_end);
    if (!*invoke) return {};
    const Tag tag = read_tag(text, position + kInvoke.size());
    if (tag.status == Tag::Status::undecided) return undecided(at_end);
    std::string name = tag.attribute("name");
    if (tag.status == Tag::Status::invalid || name.empty()) return {};
    position = tag.end;

    Region region;
    const size_t body = json_scan::skip_space(text, position);
    if (body < text.size() && text[body] == '{') {
      // Arguments written as one JSON object instead of parameters.
      Arguments arguments = read_arguments(text, body, kInvokeEnd);
      region.pieces.push_back(
          call_piece(std::move(name), std::move(arguments.text), arguments.closed || at_end));
      if (!arguments.closed) {
        region.status = at_end ? Region::Status::closed : Region::Status::open;
        region.end = text.size();
        return region;
      }
      return finish_block(text, arguments.end, at_end, kDsmlCallsEnd, std::move(region));
    }
    region.pieces.push_back(call_piece(std::move(name), "", false));
    Piece& call = region.pieces.back();
    // Each parameter is added once its closing tag is read: `{"a": 1`, then
    // `, "b": "x"`, and `}` when the call ends, so the arguments only grow.
    auto add = [&call](const std::string& key, const std::string& value) {
      call.call.arguments += call.call.arguments.empty() ? "{" : ", ";
      call.call.arguments += to_json(key) + ": " + value;
    };
    auto close = [&](size_t end) {
      call.call.arguments += call.call.arguments.empty() ? "{}" : "}";
      call.closed = true;
      region.status = Region::Status::closed;
      region.end = end;
      return region;
    };
    while (true) {
      const size_t next = json_scan::skip_space(text, position);
      const auto invoke_end = starts_with(text, next, kInvokeEnd);
      const auto parameter = starts_with(text, next, kParameter);
      if (invoke_end.value_or(false))
        return finish_block(text, next + kInvokeEnd.size(), at_end, kDsmlCallsEnd,
                            close(next + kInvokeEnd.size()));
      if (!invoke_end.has_value() || !parameter.has_value()) {
        if (at_end) return close(text.size());
        region.status = Region::Status::open;
        return region;
      }
      // Anything else ends the call; what follows is content.
      if (!*parameter) return close(position);
      const Tag parameter_tag = read_tag(text, next + kParameter.size());
      if (parameter_tag.status == Tag::Status::invalid) return close(position);
      size_t value_end = parameter_tag.status == Tag::Status::complete
                             ? text.find(kParameterEnd, parameter_tag.end)
                             : std::string_view::npos;
      const bool cut_short = value_end == std::string_view::npos;
      if (cut_short && !at_end) {
        region.status = Region::Status::open;
        return region;
      }
      if (cut_short && parameter_tag.status != Tag::Status::complete) return close(text.size());
      if (cut_short) {
        // Cut short by the end: the value as far as it was written.
        const RegionStart partial = find_marker(text, parameter_tag.end, kParameterEnd);
        value_end = partial.status == RegionStart::Status::partial ? partial.begin : text.size();
      }
      add(parameter_tag.attribute("name"),
          parameter_value(text.substr(parameter_tag.end, value_end - parameter_tag.end),
                          parameter_tag.attribute("string") != "false"));
      if (cut_short) return close(text.size());
      position = value_end + kParameterEnd.size();
    }
  }

  // After a call: the block's closing marker, if it follows.
  static Region finish_block(std::string_view text, size_t position, bool at_end,
                             std::string_view block_end, Region region) {
    const size_t next = json_scan::skip_space(text, position);
    const auto closing = starts_with(text, next, block_end);
    if (!closing.has_value() && !at_end) {
      region.status = Region::Status::open;
      return region;
    }
    region.status = Region::Status::closed;
    region.end = closing.value_or(false) ? next + block_end.size() : position;
    return region;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_deepseek_v3_format() {
  return std::make_unique<DeepSeekV3Format>();
}

}  // namespace mlx_cpp::chat
