// Qwen3-Coder: <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n
// </tool_call>. Values are bare text (often many lines of code) that the tool's schema types, as
// Qwen's own parser (which mlx-lm copies) types them. The model sometimes drops a closing tag or
// the <tool_call> wrapper; both are forgiven (a wrapper-less call must name an offered tool).
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";
// Longer is not a name: prose with a stray "<function=" is not held back waiting for a '>'.
constexpr size_t kMaxNameLength = 256;

enum class Match { yes, maybe, no };

// Whether text[position..] starts with `word`, may still (the text ends first), or not.
Match match_at(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size())
    return rest.substr(0, word.size()) == word ? Match::yes : Match::no;
  return word.substr(0, rest.size()) == rest ? Match::maybe : Match::no;
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  for (auto prefix : prefixes)
    if (text.substr(0, prefix.size()) == prefix) return true;
  return false;
}

std::string lowered(std::string_view text) {
  std::string result(text);
  for (char& c : result)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return result;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && json_scan::is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && json_scan::is_space(text.back())) text.remove_suffix(1);
  return text;
}

// The NAME of <function=NAME> or <parameter=NAME>, read from just past the '='.
struct Header {
  enum class Status { complete, incomplete, invalid } status = Status::invalid;
  std::string name;
  size_t end = 0;  // one past the '>'
};

Header read_header(std::string_view text, size_t begin) {
  for (size_t i = begin; i < text.size() && i - begin <= kMaxNameLength; ++i) {
    if (text[i] == '>') {
      const auto name = trimmed(text.substr(begin, i - begin));
      if (name.empty() || name.find_first_of(" \t\r\n") != std::string_view::npos) return {};
      return {Header::Status::complete, std::string(name), i + 1};
    }
    if (text[i] == '<' || text[i] == '\n') return {};
  }
  if (text.size() - begin > kMaxNameLength) return {};
  return {Header::Status::incomplete, "", 0};
}

// Python's int(float(text)) / float(text), which the numeric types go through; integral values
// become JSON integers. No inf or nan: JSON has none.
std::optional<Json> numeric_value(std::string_view text, bool integer_type) {
  text = trimmed(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string_view::npos)
    return std::nullopt;
  std::int64_t exact = 0;
  auto [exact_end, exact_error] = std::from_chars(text.data(), text.data() + text.size(), exact);
  if (exact_error == std::errc() && exact_end == text.data() + text.size()) return Json(exact);
  double number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(number))
    return std::nullopt;
  if (std::trunc(number) != number)
    return integer_type ? std::nullopt : std::optional(Json(number));
  if (std::fabs(number) < 9.2e18) return Json(static_cast<std::int64_t>(number));
  return Json(number);
}

// Stands in for Python's ast.literal_eval as far as JSON reaches: numbers, double-quoted strings,
// lists, dicts, and Python's spellings True/False/None (JSON's true/false/null are mere names to
// Python, so they stay text).
Json literal_value(const std::string& value) {
  const auto text = trimmed(value);
  if (text == "True") return true;
  if (text == "False") return false;
  if (text == "None") return nullptr;
  auto parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded() || parsed.is_boolean() || parsed.is_null()) return value;
  return parsed;
}

// A string value of an enum, with the whitespace around it that a grammar
// lets through between the tags (xgrammar's qwen_xml style) taken off when
// that makes it one of the choices; other strings stay as written.
Json enum_value(const std::string& value, const Json& property) {
  const auto choices = property.find("enum");
  if (choices == property.end() || !choices->is_array()) return value;
  const auto bare = std::string(trimmed(value));
  for (const auto& choice : *choices)
    if (choice == value) return value;
  for (const auto& choice : *choices)
    if (choice == bare) return bare;
  return value;
}

// A parameter's value as the schema types it. Where Qwen's parser gives up on a value (an
// integer that is not one), the text is kept rather than the call dropped.
Json typed_value(const std::string& value, const Json* property) {
  if (lowered(value) == "null") return nullptr;
  if (property == nullptr || !property->is_object() || property->empty()) return value;
  const auto type = property->find("type");
  if (type == property->end()) {
    auto parsed = Json::parse(value, nullptr, false);
    return !parsed.is_discarded() && (parsed.is_object() || parsed.is_array()) ? parsed
                                                                               : Json(value);
  }
  const std::string name = type->is_string() ? lowered(trimmed(type->get<std::string>())) : "";
  if (name == "string" || name == "str" || name == "text" || name == "varchar" || name == "char" ||
      name == "enum")
    return enum_value(value, *property);
  if (starts_with_any(name, {"int", "uint", "long", "short", "unsigned"}))
    return numeric_value(value, true).value_or(Json(value));
  if (starts_with_any(name, {"num", "float"}))
    return numeric_value(value, false).value_or(Json(value));
  if (name == "boolean" || name == "bool" || name == "binary")
    return lowered(trimmed(value)) == "true";
  if (name == "object" || name == "array" || name == "arr" ||
      starts_with_any(name, {"dict", "list"})) {
    auto parsed = Json::parse(value, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return literal_value(value);
}

// JSON spaced as Python's json.dumps spaces it (", " and ": "), so that arguments read the same
// as mlx-lm's.
std::string encode(const Json& value) {
  if (value.is_object() || value.is_array()) {
    std::string text;
    for (const auto& item : value.items()) {
      text += text.empty() ? "" : ", ";
      if (value.is_object()) text += encode(Json(item.key())) + ": ";
      text += encode(item.value());
    }
    return value.is_object() ? "{" + text + "}" : "[" + text + "]";
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Arguments grow one whole parameter at a time: `{"a": 1`, then `, "b": "x"`, then `}`.
void add_parameter(Piece& call, const std::string& name, std::string_view raw,
                   const Json* properties) {
  std::string value(raw);
  if (!value.empty() && value.front() == '\n') value.erase(0, 1);
  if (!value.empty() && value.back() == '\n') value.pop_back();
  const Json* property = nullptr;
  if (properties != nullptr && properties->is_object()) {
    auto found = properties->find(name);
    if (found != properties->end()) property = &*found;
  }
  auto& arguments = call.call.arguments;
  arguments += arguments.empty() ? "{" : ", ";
  arguments += encode(name) + ": " + encode(typed_value(value, property));
}

void close_call(Piece& call) {
  call.call.arguments += call.call.arguments.empty() ? "{}" : "}";
  call.closed = true;
}

// How one <function=...> block ended.
struct CallEnd {
  enum class How {
    open,             // still being written
    function_closed,  // at its </function>; `position` is past it
    region_closed,    // at a </tool_call> (its </function> missing) or the end of the answer
    next_function,    // a <function= at `position` began before this one closed
  } how = How::open;
  size_t position = 0;
};

class Qwen3CoderFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "qwen3_coder"; }

  // A <function= right after <tool_call> (past whitespace, or the "\n" of a template's string
  // literal when this is the template's source), with a <parameter= after it. Seed-OSS writes
  // the same inside <seed:tool_call>, which this does not claim.
  bool renders(std::string_view rendered) const override {
    for (size_t at = rendered.find(kFunctionOpen); at != std::string_view::npos;
         at = rendered.find(kFunctionOpen, at + 1)) {
      size_t end = at;
      while (end > 0) {
        if (json_scan::is_space(rendered[end - 1])) {
          --end;
        } else if (end >= 2 && rendered.substr(end - 2, 2) == "\\n") {
          end -= 2;
        } else {
          break;
        }
      }
      if (end >= kCallOpen.size() &&
          rendered.substr(end - kCallOpen.size(), kCallOpen.size()) == kCallOpen &&
          rendered.find(kParameterOpen, at) != std::string_view::npos)
        return true;
    }
    return false;
  }

  std::vector<std::string> marker_tokens() const override {
    return {std::string(kCallOpen), std::string(kCallClose)};
  }
  // <tool_call>\n<function=NAME>\n, the parameters in xgrammar's
  // qwen_xml style, </function>\n</tool_call>; a line between calls.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence({marker(std::string(kCallOpen)),
                       text("\n" + std::string(kFunctionOpen) + tool.name + ">\n"),
                       arguments(tool.parameters, "qwen_xml"),
                       text(std::string(kFunctionClose) + "\n"), marker(std::string(kCallClose))});
    };
    return calls(any_tool(forcing.tools, call), text("\n"), forcing.several);
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    return earliest(find_marker(text, from, kCallOpen), find_marker(text, from, kFunctionOpen));
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext& context) const override {
    const bool wrapped = text.compare(begin, kCallOpen.size(), kCallOpen) == 0;
    size_t position = begin;
    if (wrapped) {
      position = json_scan::skip_space(text, begin + kCallOpen.size());
      const Match function = match_at(text, position, kFunctionOpen);
      if (function == Match::maybe) return at_end ? Region{} : Region{Region::Status::open, 0, {}};
      if (function == Match::no) return {};
    }
    Region region;
    // One <function=...> per pass; a <tool_call> may hold several.
    while (true) {
      const Header header = read_header(text, position + kFunctionOpen.size());
      if (header.status == Header::Status::incomplete && !at_end) return opened(region);
      if (header.status != Header::Status::complete || (!wrapped && !context.offers(header.name))) {
        if (region.pieces.empty()) return {};
        return closed(region, position);  // what follows the calls is read afresh
      }
      const CallEnd call = read_call(text, header, at_end, context, region);
      switch (call.how) {
        case CallEnd::How::open:
          return opened(region);
        case CallEnd::How::region_closed:
          return closed(region, call.position);
        case CallEnd::How::next_function:
          position = call.position;
          continue;
        case CallEnd::How::function_closed:
          break;
      }
      const size_t after = json_scan::skip_space(text, call.position);
      // A wrapper-less call may still be followed by a stray </tool_call>.
      const Match wrapper_close = match_at(text, after, kCallClose);
      if (wrapper_close == Match::yes) return closed(region, after + kCallClose.size());
      const Match next = match_at(text, after, kFunctionOpen);
      if (next == Match::yes) {
        position = after;
        continue;
      }
      if ((wrapper_close == Match::maybe || next == Match::maybe) && !at_end) return opened(region);
      return closed(region, call.position);
    }
  }

 private:
  // The parameters of the call named by `header`, appended to region.pieces as they complete.
  // Text between parameters is skipped, as Qwen's parser skips it.
  static CallEnd read_call(std::string_view text, const Header& header, bool at_end,
                           const ToolContext& context, Region& region) {
    const Json* schema = context.parameters_of(header.name);
    const Json* properties = nullptr;
    if (schema != nullptr && schema->is_object()) {
      auto found = schema->find("properties");
      if (found != schema->end()) properties = &*found;
    }
    region.pieces.push_back(call_piece(header.name, "", false));
    Piece& call = region.pieces.back();
    auto finish = [&call](CallEnd::How how, size_t position) {
      close_call(call);
      return CallEnd{how, position};
    };
    size_t position = header.end;
    while (true) {
      const RegionStart next = earliest(earliest(find_marker(text, position, kParameterOpen),
                                                 find_marker(text, position, kFunctionOpen)),
                                        earliest(find_marker(text, position, kFunctionClose),
                                                 find_marker(text, position, kCallClose)));
      if (next.status != RegionStart::Status::found)
        return at_end ? finish(CallEnd::How::region_closed, text.size()) : CallEnd{};
      if (text.compare(next.begin, kCallClose.size(), kCallClose) == 0)
        return finish(CallEnd::How::region_closed, next.begin + kCallClose.size());
      if (text.compare(next.begin, kFunctionClose.size(), kFunctionClose) == 0)
        return finish(CallEnd::How::function_closed, next.begin + kFunctionClose.size());
      if (text.compare(next.begin, kFunctionOpen.size(), kFunctionOpen) == 0)
        return finish(CallEnd::How::next_function, next.begin);

      const Header parameter = read_header(text, next.begin + kParameterOpen.size());
      if (parameter.status == Header::Status::incomplete)
        return at_end ? finish(CallEnd::How::region_closed, text.size()) : CallEnd{};
      if (parameter.status == Header::Status::invalid) {
        position = next.begin + 1;
        continue;
      }
      // The value runs to the first </parameter>; as in mlx-lm, a </tool_call> ends the call
      // first, and the unclosed value is dropped.
      const RegionStart value_end = earliest(find_marker(text, parameter.end, kParameterClose),
                                             find_marker(text, parameter.end, kCallClose));
      if (value_end.status != RegionStart::Status::found) {
        if (!at_end) return {};
        // Cut short by the end of the answer: the value as written, less a closing tag begun.
        const size_t stop =
            value_end.status == RegionStart::Status::partial ? value_end.begin : text.size();
        add_parameter(call, parameter.name, text.substr(parameter.end, stop - parameter.end),
                      properties);
        return finish(CallEnd::How::region_closed, text.size());
      }
      if (text.compare(value_end.begin, kCallClose.size(), kCallClose) == 0)
        return finish(CallEnd::How::region_closed, value_end.begin + kCallClose.size());
      add_parameter(call, parameter.name,
                    text.substr(parameter.end, value_end.begin - parameter.end), properties);
      position = value_end.begin + kParameterClose.size();
    }
  }

  static Region opened(Region& region) {
    region.status = Region::Status::open;
    return std::move(region);
  }
  static Region closed(Region& region, size_t end) {
    region.status = Region::Status::closed;
    region.end = end;
    return std::move(region);
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_qwen3_coder_format() {
  return std::make_unique<Qwen3CoderFormat>();
}

}  // namespace mlx_cpp::chat
