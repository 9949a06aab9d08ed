// GLM-4.5 / 4.6 / 4.7: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n...
// </tool_call> (GLM-4.7 may leave out the newlines). Values are bare text: those the tool's schema
// declares strings stay text, others are read as JSON when they parse (as mlx-lm's glm47 parser
// reads them), else kept as text.
#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kKeyOpen = "<arg_key>";
constexpr std::string_view kKeyClose = "</arg_key>";
constexpr std::string_view kValueOpen = "<arg_value>";
constexpr std::string_view kValueClose = "</arg_value>";
// Longer is not a name: prose after a stray <tool_call> is not held back waiting for markup.
constexpr size_t kMaxNameLength = 256;

enum class Match { yes, maybe, no };

// Whether text[position..] starts with `word`, may still (the text ends first), or not.
Match match_at(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size())
    return rest.substr(0, word.size()) == word ? Match::yes : Match::no;
  return word.substr(0, rest.size()) == rest ? Match::maybe : Match::no;
}

bool is_blank(char c) {
  return json_scan::is_space(c) || c == '\v' || c == '\f';
}

// Python's str.strip(), which mlx-lm applies to keys and values.
std::string_view stripped(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

// Between </arg_key> and <arg_value>: whitespace, or the two characters "\n", which GLM
// sometimes writes literally.
size_t skip_separator(std::string_view text, size_t position) {
  while (position < text.size()) {
    if (is_blank(text[position])) {
      ++position;
    } else if (text.compare(position, 2, "\\n") == 0) {
      position += 2;
    } else {
      break;
    }
  }
  return position;
}

// Whether the schema declares `key` a string: such values are kept as written.
bool declared_string(const Json* schema, const std::string& key) {
  if (schema == nullptr || !schema->is_object()) return false;
  const auto properties = schema->find("properties");
  if (properties == schema->end() || !properties->is_object()) return false;
  const auto property = properties->find(key);
  if (property == properties->end() || !property->is_object()) return false;
  const auto type = property->find("type");
  return type != property->end() && *type == "string";
}

// JSON where the value parses as JSON, Python's True/False/None (ast.literal_eval's share that
// JSON lacks), else the text itself.
Json deserialized(const std::string& value) {
  auto parsed = Json::parse(value, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  if (value == "True") return true;
  if (value == "False") return false;
  if (value == "None") return nullptr;
  return value;
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

// Arguments grow one whole pair at a time: `{"a": 1`, then `, "b": "x"`, then `}`.
void add_argument(Piece& call, std::string_view raw_key, std::string_view raw_value,
                  const Json* schema) {
  const std::string key(stripped(raw_key));
  const std::string value(stripped(raw_value));
  auto& arguments = call.call.arguments;
  arguments += arguments.empty() ? "{" : ", ";
  arguments +=
      encode(key) + ": " + encode(declared_string(schema, key) ? Json(value) : deserialized(value));
}

class Glm45Format : public RegionFormat {
 public:
  std::string_view name() const override { return "glm45"; }

  // A <tool_call> whose arguments are <arg_key> pairs (in a rendering, and in the template's
  // own source, whose system prompt shows the format).
  bool renders(std::string_view rendered) const override {
    const size_t open = rendered.find(kOpen);
    return open != std::string_view::npos &&
           rendered.find(kKeyOpen, open) != std::string_view::npos;
  }

  std::vector<std::string> marker_tokens() const override {
    return {std::string(kOpen),     std::string(kClose),     std::string(kKeyOpen),
            std::string(kKeyClose), std::string(kValueOpen), std::string(kValueClose)};
  }
  // <tool_call>NAME\n, the arguments in xgrammar's glm_xml style, then
  // </tool_call>; a line between calls.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence({marker(std::string(kOpen)), text(tool.name + "\n"),
                       arguments(tool.parameters, "glm_xml"), marker(std::string(kClose))});
    };
    return calls(any_tool(forcing.tools, call), text("\n"), forcing.several);
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    return find_marker(text, from, kOpen);
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext& context) const override {
    // The name runs to the first whitespace or markup.
    const size_t name_begin = json_scan::skip_space(text, begin + kOpen.size());
    size_t name_end = name_begin;
    while (name_end < text.size() && !is_blank(text[name_end]) && text[name_end] != '<') ++name_end;
    if (name_end - name_begin > kMaxNameLength) return {};
    if (name_end == text.size() && !at_end) return {Region::Status::open, 0, {}};
    const std::string name(text.substr(name_begin, name_end - name_begin));
    // JSON or Python-style calls are not this format's.
    if (name.empty() || name.find_first_of("{[\"'(") != std::string::npos) return {};

    // A call only where the name is followed by its arguments or the end of the call; a lone
    // name cut short by the end of the answer is a call without arguments, as in mlx-lm.
    size_t position = json_scan::skip_space(text, name_end);
    const Match key = match_at(text, position, kKeyOpen);
    const Match close = match_at(text, position, kClose);
    if (key == Match::no && close == Match::no) return {};
    if (key != Match::yes && close != Match::yes && !at_end) return {Region::Status::open, 0, {}};

    Region region;
    region.pieces.push_back(call_piece(name, "", false));
    Piece& call = region.pieces.back();
    const Json* schema = context.parameters_of(name);
    auto finish = [&](size_t end) {
      call.call.arguments += call.call.arguments.empty() ? "{}" : "}";
      call.closed = true;
      region.status = Region::Status::closed;
      region.end = end;
      return std::move(region);
    };
    auto wait = [&]() {
      region.status = Region::Status::open;
      return std::move(region);
    };
    // One pair per pass; text between pairs is skipped, as mlx-lm skips it.
    while (true) {
      const RegionStart next =
          earliest(find_marker(text, position, kKeyOpen), find_marker(text, position, kClose));
      if (next.status != RegionStart::Status::found) return at_end ? finish(text.size()) : wait();
      if (text.compare(next.begin, kClose.size(), kClose) == 0)
        return finish(next.begin + kClose.size());

      const size_t key_begin = next.begin + kKeyOpen.size();
      const size_t key_end = text.find('<', key_begin);
      const Match key_close =
          key_end == std::string_view::npos ? Match::maybe : match_at(text, key_end, kKeyClose);
      if (key_close == Match::maybe) return at_end ? finish(text.size()) : wait();
      if (key_close == Match::no) {  // not a key after all
        position = key_begin;
        continue;
      }
      const size_t value_open = skip_separator(text, key_end + kKeyClose.size());
      // A lone backslash at the end may be the start of a literal "\n".
      const Match value = value_open + 1 == text.size() && text[value_open] == '\\'
                              ? Match::maybe
                              : match_at(text, value_open, kValueOpen);
      if (value == Match::maybe) return at_end ? finish(text.size()) : wait();
      if (value == Match::no) {  // a key without a value is dropped
        position = value_open;
        continue;
      }
      const std::string_view key_text = text.substr(key_begin, key_end - key_begin);
      const size_t value_begin = value_open + kValueOpen.size();
      // The value runs to the first </arg_value>; as in mlx-lm, a </tool_call> ends the call
      // first, and the unclosed value is dropped.
      const RegionStart value_end = earliest(find_marker(text, value_begin, kValueClose),
                                             find_marker(text, value_begin, kClose));
      if (value_end.status != RegionStart::Status::found) {
        if (!at_end) return wait();
        // Cut short by the end of the answer: the value as written, less a closing tag begun.
        const size_t stop =
            value_end.status == RegionStart::Status::partial ? value_end.begin : text.size();
        add_argument(call, key_text, text.substr(value_begin, stop - value_begin), schema);
        return finish(text.size());
      }
      if (text.compare(value_end.begin, kClose.size(), kClose) == 0)
        return finish(value_end.begin + kClose.size());
      add_argument(call, key_text, text.substr(value_begin, value_end.begin - value_begin), schema);
      position = value_end.begin + kValueClose.size();
    }
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_glm45_format() {
  return std::make_unique<Glm45Format>();
}

}  // namespace mlx_cpp::chat
