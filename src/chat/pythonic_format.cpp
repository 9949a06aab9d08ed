// Calls written as a Python list: [get_weather(city="Paris"), search(q='x', n=3)]
// (Llama 3.2 / 4, LFM2 and models prompted like them). LFM2 wraps the list in
// <|tool_call_start|>...<|tool_call_end|>, Llama 4 may wrap it in
// <|python_start|>...<|python_end|>. Without a wrapper, a list counts only at
// the start of the answer and only when each call names an offered tool, so
// that prose starting with '[' stays content.
//
// Arguments are Python literals, converted to JSON. They are not JSON while
// being written, so a call appears whole once its closing parenthesis is read.
#include <algorithm>
#include <cctype>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/python_call_grammar.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

constexpr std::string_view kToolCallStart = "<|tool_call_start|>";
constexpr std::string_view kToolCallEnd = "<|tool_call_end|>";
constexpr std::string_view kPythonStart = "<|python_start|>";
constexpr std::string_view kPythonEnd = "<|python_end|>";
constexpr int kMaxDepth = 64;

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

std::string to_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_identifier_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_identifier_char(char c) {
  return is_identifier_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

enum class Status { complete, incomplete, invalid };

// A Python literal read as JSON text.
struct Literal {
  Status status = Status::incomplete;
  std::string json;
  size_t end = 0;  // complete: one past its last byte
};

Literal invalid() {
  return {Status::invalid};
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// The escape after a backslash at text[position - 1], appended decoded;
// returns one past it, 0 when the text ends inside it, npos when invalid.
size_t read_escape(std::string_view text, size_t position, std::string& out) {
  const char c = text[position];
  static constexpr std::string_view kSimple = "\\'\"abfnrtv";
  static constexpr std::string_view kDecoded = "\\'\"\a\b\f\n\r\t\v";
  if (c == '\n') return position + 1;  // a line continuation
  if (auto simple = kSimple.find(c); simple != std::string_view::npos) {
    out += kDecoded[simple];
    return position + 1;
  }
  if (c >= '0' && c <= '7') {
    size_t end = position;
    while (end < text.size() && end < position + 3 && text[end] >= '0' && text[end] <= '7') ++end;
    if (end == text.size() && end < position + 3) return 0;  // more digits may come
    append_utf8(out, std::stoul(std::string(text.substr(position, end - position)), nullptr, 8));
    return end;
  }
  if (c != 'x' && c != 'u' && c != 'U') {
    out += '\\';  // Python keeps unknown escapes as written
    out += c;
    return position + 1;
  }
  const size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
  if (position + 1 + digits > text.size()) return 0;
  const std::string number(text.substr(position + 1, digits));
  if (number.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return std::string_view::npos;
  const unsigned long code = std::stoul(number, nullptr, 16);
  if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return std::string_view::npos;
  append_utf8(out, static_cast<uint32_t>(code));
  return position + 1 + digits;
}

Literal read_string(std::string_view text, size_t position) {
  const char quote = text[position];
  const std::string triple(3, quote);
  if (position + 2 >= text.size() &&
      text.substr(position) == triple.substr(0, text.size() - position))
    return {};  // '' may still become '''
  const bool is_triple = text.compare(position, 3, triple) == 0;
  std::string decoded;
  for (size_t i = position + (is_triple ? 3 : 1); i < text.size();) {
    const char c = text[i];
    if (c == '\\') {
      if (i + 1 >= text.size()) return {};
      const size_t next = read_escape(text, i + 1, decoded);
      if (next == 0) return {};
      if (next == std::string_view::npos) return invalid();
      i = next;
    } else if (c == quote && !is_triple) {
      return {Status::complete, to_json(decoded), i + 1};
    } else if (c == quote && text.compare(i, 3, triple) == 0) {
      return {Status::complete, to_json(decoded), i + 3};
    } else if (c == quote && text.substr(i) == triple.substr(0, text.size() - i)) {
      return {};  // the closing quotes may be arriving
    } else if (c == '\n' && !is_triple) {
      return invalid();
    } else {
      decoded += c;
      ++i;
    }
  }
  return {};
}

// An int or float (with Python's underscores, prefixes and bare dots) as
// a JSON number.
std::optional<std::string> number_json(std::string token) {
  std::erase(token, '_');
  std::string sign;
  if (!token.empty() && (token[0] == '-' || token[0] == '+')) {
    if (token[0] == '-') sign = "-";
    token.erase(0, 1);
  }
  if (token.empty()) return std::nullopt;
  if (token.size() > 2 && token[0] == '0' &&
      std::string_view("xXoObB").find(token[1]) != std::string_view::npos) {
    const int base = (token[1] == 'x' || token[1] == 'X')   ? 16
                     : (token[1] == 'o' || token[1] == 'O') ? 8
                                                            : 2;
    const std::string digits = token.substr(2);
    const char* allowed = base == 16 ? "0123456789abcdefABCDEF" : base == 8 ? "01234567" : "01";
    if (digits.find_first_not_of(allowed) != std::string::npos || digits.size() > 15)
      return std::nullopt;
    return sign + std::to_string(std::stoull(digits, nullptr, base));
  }
  if (token.find_first_not_of("0123456789") == std::string::npos) {
    const size_t first = std::min(token.find_first_not_of('0'), token.size() - 1);
    return sign + token.substr(first);
  }
  if (token.find_first_not_of("0123456789.eE+-") != std::string::npos ||
      token.find_first_of("0123456789") == std::string::npos)
    return std::nullopt;
  if (json_scan::is_valid(sign + token)) return sign + token;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(token, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != token.size()) return std::nullopt;
  return sign + to_json(value);
}

Literal read_number(std::string_view text, size_t position) {
  size_t end = position + 1;
  while (end < text.size() && (is_identifier_char(text[end]) || text[end] == '.' ||
                               ((text[end] == '+' || text[end] == '-') &&
                                (text[end - 1] == 'e' || text[end - 1] == 'E'))))
    ++end;
  if (end == text.size()) return {};  // more digits may come
  auto json = number_json(std::string(text.substr(position, end - position)));
  if (!json) return invalid();
  return {Status::complete, *json, end};
}

// True/False/None, and the JSON spellings that chat templates render into
// nested values (mlx-lm reads those too).
Literal read_word(std::string_view text, size_t position) {
  size_t end = position;
  while (end < text.size() && is_identifier_char(text[end])) ++end;
  if (end == text.size()) return {};
  const auto word = text.substr(position, end - position);
  if (word == "True" || word == "true") return {Status::complete, "true", end};
  if (word == "False" || word == "false") return {Status::complete, "false", end};
  if (word == "None" || word == "null") return {Status::complete, "null", end};
  return invalid();
}

Literal read_value(std::string_view text, size_t position, int depth);

// A list or tuple (as a JSON array) or a dict (as an object), from its
// opening bracket to `closer`.
Literal read_container(std::string_view text, size_t position, char closer, int depth) {
  const bool is_dict = closer == '}';
  std::string json(1, is_dict ? '{' : '[');
  size_t elements = 0;
  bool trailing_comma = false;
  position = json_scan::skip_space(text, position + 1);
  while (position < text.size() && text[position] != closer) {
    Literal element = read_value(text, position, depth + 1);
    if (element.status != Status::complete) return element;
    if (elements++ > 0) json += ", ";
    position = json_scan::skip_space(text, element.end);
    if (is_dict) {
      // JSON keys are strings: json.dumps writes 1, True and None keys so.
      if (element.json[0] == '[' || element.json[0] == '{') return invalid();
      json += element.json[0] == '"' ? element.json : to_json(element.json);
      if (position >= text.size()) return {};
      if (text[position] != ':') return invalid();
      element = read_value(text, json_scan::skip_space(text, position + 1), depth + 1);
      if (element.status != Status::complete) return element;
      json += ": ";
      position = json_scan::skip_space(text, element.end);
    }
    json += element.json;
    if (position >= text.size()) return {};
    trailing_comma = text[position] == ',';
    if (trailing_comma)
      position = json_scan::skip_space(text, position + 1);
    else if (text[position] != closer)
      return invalid();
  }
  if (position >= text.size()) return {};
  // (x) is x itself; only (x,) is a tuple.
  if (closer == ')' && elements == 1 && !trailing_comma)
    return {Status::complete, json.substr(1), position + 1};
  json += is_dict ? '}' : ']';
  return {Status::complete, std::move(json), position + 1};
}

Literal read_value(std::string_view text, size_t position, int depth) {
  if (position >= text.size()) return {};
  if (depth > kMaxDepth) return invalid();
  const char c = text[position];
  if (c == '"' || c == '\'') return read_string(text, position);
  if (c == '[') return read_container(text, position, ']', depth);
  if (c == '(') return read_container(text, position, ')', depth);
  if (c == '{') return read_container(text, position, '}', depth);
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')
    return read_number(text, position);
  if (is_identifier_start(c)) return read_word(text, position);
  return invalid();
}

struct PythonCall {
  Status status = Status::incomplete;
  std::string name;
  std::string arguments;
  size_t end = 0;
};

// NAME(key=value, ...), NAME possibly dotted. `offered`, when given, must
// offer the name.
PythonCall read_call(std::string_view text, size_t position, const ToolContext* offered) {
  PythonCall call;
  while (true) {
    if (position >= text.size()) return call;
    if (!is_identifier_start(text[position])) return {Status::invalid};
    while (position < text.size() && is_identifier_char(text[position]))
      call.name += text[position++];
    if (position >= text.size()) return call;
    if (text[position] != '.') break;
    call.name += text[position++];
  }
  position = json_scan::skip_space(text, position);
  if (position >= text.size()) return call;
  if (text[position] != '(') return {Status::invalid};
  if (offered != nullptr && !offered->offers(call.name)) return {Status::invalid};
  std::vector<std::string> keys;
  position = json_scan::skip_space(text, position + 1);
  while (position < text.size() && text[position] != ')') {
    size_t key_end = position;
    while (key_end < text.size() && is_identifier_char(text[key_end])) ++key_end;
    if (key_end >= text.size()) return call;
    std::string key(text.substr(position, key_end - position));
    if (key.empty() || !is_identifier_start(key[0]) ||
        std::find(keys.begin(), keys.end(), key) != keys.end())
      return {Status::invalid};  // a positional argument, or a repeated one
    position = json_scan::skip_space(text, key_end);
    if (position >= text.size()) return call;
    if (text[position] != '=') return {Status::invalid};
    const Literal value = read_value(text, json_scan::skip_space(text, position + 1), 0);
    if (value.status == Status::invalid) return {Status::invalid};
    if (value.status == Status::incomplete) return call;
    call.arguments += keys.empty() ? "{" : ", ";
    call.arguments += to_json(key) + ": " + value.json;
    keys.push_back(std::move(key));
    position = json_scan::skip_space(text, value.end);
    if (position >= text.size()) return call;
    if (text[position] == ',')
      position = json_scan::skip_space(text, position + 1);
    else if (text[position] != ')')
      return {Status::invalid};
  }
  if (position >= text.size()) return call;
  call.arguments += keys.empty() ? "{}" : "}";
  call.status = Status::complete;
  call.end = position + 1;
  return call;
}

class PythonicFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "pythonic"; }
  bool renders(std::string_view rendered) const override {
    return rendered.find("get_weather(city=") != std::string_view::npos;
  }
  std::vector<std::string> marker_tokens() const override {
    return {std::string(kToolCallStart), std::string(kToolCallEnd), std::string(kPythonStart),
            std::string(kPythonEnd)};
  }
  // The list as an EBNF grammar (python_call_grammar.h), between LFM2's
  // markers when the template writes them.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    std::string rules = python_literal_rules(), call;
    for (size_t i = 0; i < forcing.tools.size(); ++i) {
      const auto& tool = forcing.tools[i];
      auto tool_rules = python_call_rules(tool.name, tool.parameters, "tool" + std::to_string(i));
      rules += tool_rules.rules;
      call += (call.empty() ? "" : " | ") + tool_rules.root;
    }
    rules += "call ::= " + call + "\n";
    rules += std::string("root ::= \"[\" call ") + (forcing.several ? "(\", \" call)* " : "") +
             "\"]\"\n";
    Json list = {{"type", "grammar"}, {"grammar", rules}};
    if (forcing.rendered_call.find(kToolCallStart) == std::string_view::npos) return list;
    return sequence(
        {marker(std::string(kToolCallStart)), std::move(list), marker(std::string(kToolCallEnd))});
  }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    const RegionStart start =
        earliest(find_marker(text, from, kToolCallStart), find_marker(text, from, kPythonStart));
    const size_t first = json_scan::skip_space(text, 0);
    if (first >= from && first < text.size() && text[first] == '[' &&
        (start.status == RegionStart::Status::none || first < start.begin))
      return {RegionStart::Status::found, first};
    return start;
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext& context) const override {
    size_t position = begin;
    std::string_view closer;
    if (text.compare(position, kToolCallStart.size(), kToolCallStart) == 0) {
      position += kToolCallStart.size();
      closer = kToolCallEnd;
    } else if (text.compare(position, kPythonStart.size(), kPythonStart) == 0) {
      position += kPythonStart.size();
      closer = kPythonEnd;
    }
    // Inside the markers any name is a call; a bare list must name offered tools.
    const ToolContext* offered = closer.empty() ? &context : nullptr;
    position = json_scan::skip_space(text, position);
    Region region;
    if (position >= text.size()) return cut_short(std::move(region), position, at_end);
    if (text[position] != '[') return {};
    position = json_scan::skip_space(text, position + 1);
    while (true) {
      if (position >= text.size()) return cut_short(std::move(region), position, at_end);
      if (text[position] == ']' && !region.pieces.empty()) break;
      PythonCall call = read_call(text, position, offered);
      if (call.status == Status::incomplete) return cut_short(std::move(region), position, at_end);
      if (call.status == Status::invalid) return ended_early(std::move(region), position);
      region.pieces.push_back(call_piece(std::move(call.name), std::move(call.arguments), true));
      position = json_scan::skip_space(text, call.end);
      if (position >= text.size()) return cut_short(std::move(region), position, at_end);
      if (text[position] == ']') break;
      if (text[position] != ',') return ended_early(std::move(region), position);
      position = json_scan::skip_space(text, position + 1);
    }
    ++position;  // the list's ']'
    region.status = Region::Status::closed;
    region.end = position;
    if (closer.empty()) return region;
    const size_t next = json_scan::skip_space(text, position);
    const auto closed = starts_with(text, next, closer);
    if (!closed.has_value() && !at_end) region.status = Region::Status::open;
    if (closed.value_or(false)) region.end = next + closer.size();
    return region;
  }

 private:
  // The text ends inside the list: held while more may come; at the end the
  // calls read so far stand and the unfinished one is content.
  static Region cut_short(Region region, size_t position, bool at_end) {
    if (!at_end) {
      region.status = Region::Status::open;
      return region;
    }
    return ended_early(std::move(region), position);
  }

  // What is not a call ends the list: the calls before it stand (they have
  // been shown), and the rest is content; with none, nothing was markup.
  static Region ended_early(Region region, size_t position) {
    if (region.pieces.empty()) return {};
    region.status = Region::Status::closed;
    region.end = position;
    return region;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_pythonic_format() {
  return std::make_unique<PythonicFormat>();
}

}  // namespace mlx_cpp::chat
