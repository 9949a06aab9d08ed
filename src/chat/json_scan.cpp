#include "chat/json_scan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace mlx_cpp::chat::json_scan {
namespace {

bool is_literal_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
         c == '+' || c == '.';
}

// The extent of a string literal starting at text[begin] == '"'.
Extent string_extent(std::string_view text, size_t begin) {
  for (size_t i = begin + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return {Status::complete, i + 1};
    } else if (static_cast<unsigned char>(text[i]) < 0x20 && text[i] != '\t' && text[i] != '\n' &&
               text[i] != '\r') {
      return {Status::invalid, i};
    }
  }
  return {Status::incomplete, text.size()};
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

size_t skip_space(std::string_view text, size_t position) {
  while (position < text.size() && is_space(text[position])) ++position;
  return position;
}

Extent value_extent(std::string_view text, size_t begin, bool at_end) {
  if (begin >= text.size()) return {Status::incomplete, text.size()};
  const char first = text[begin];
  if (first == '"') return string_extent(text, begin);
  if (first == '{' || first == '[') {
    std::vector<char> closers;
    for (size_t i = begin; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        auto string = string_extent(text, i);
        if (string.status != Status::complete) return string;
        i = string.end - 1;
      } else if (c == '{' || c == '[') {
        closers.push_back(c == '{' ? '}' : ']');
      } else if (c == '}' || c == ']') {
        if (closers.empty() || closers.back() != c) return {Status::invalid, i};
        closers.pop_back();
        if (closers.empty()) return {Status::complete, i + 1};
      }
    }
    return {Status::incomplete, text.size()};
  }
  if (!is_literal_char(first)) return {Status::invalid, begin};
  size_t end = begin;
  while (end < text.size() && is_literal_char(text[end])) ++end;
  if (end == text.size() && !at_end) return {Status::incomplete, end};
  return {Status::complete, end};
}

bool is_valid(std::string_view text) {
  return nlohmann::json::accept(text);
}

std::optional<std::string> decode_string(std::string_view literal) {
  auto value = nlohmann::json::parse(literal, nullptr, false);
  if (value.is_discarded() || !value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

ObjectCall read_object_call(std::string_view text, size_t begin, bool at_end,
                            const CallKeys& keys) {
  using State = ObjectCall::State;
  ObjectCall call;
  if (begin >= text.size()) return call;
  if (text[begin] != '{') return {State::not_a_call};
  bool arguments_seen = false;
  std::optional<std::string> pending_arguments;  // arguments read before the name
  // Where the object stops being what it should: before the call is shown
  // it was never a call; once a stream has shown it (state open: name and
  // arguments begun) it cannot be taken back, so it ends there as it
  // stands and what follows is text again, whole or streamed alike.
  auto broken_at = [&](size_t where) -> ObjectCall {
    if (call.state != State::open) return {State::not_a_call};
    if (pending_arguments) call.arguments = *pending_arguments;
    call.state = State::closed;
    call.end = where;
    return call;
  };
  size_t position = begin + 1;
  while (true) {
    position = skip_space(text, position);
    if (position >= text.size()) break;
    if (text[position] == '}') {
      if (call.name.empty() || !arguments_seen) return {State::not_a_call};
      if (pending_arguments) call.arguments = *pending_arguments;
      call.state = State::closed;
      call.end = position + 1;
      return call;
    }
    if (text[position] == ',') {
      position = skip_space(text, position + 1);
      if (position >= text.size()) break;
    }
    if (text[position] != '"') return broken_at(position);
    auto key_extent = string_extent(text, position);
    if (key_extent.status == Status::invalid) return broken_at(position);
    if (key_extent.status == Status::incomplete) break;
    auto key = decode_string(text.substr(position, key_extent.end - position));
    if (!key) return broken_at(position);
    position = skip_space(text, key_extent.end);
    if (position >= text.size()) break;
    if (text[position] != ':') return broken_at(position);
    position = skip_space(text, position + 1);
    if (position >= text.size()) break;
    const size_t value_begin = position;
    auto value = value_extent(text, value_begin, at_end);
    const bool is_name = contains(keys.name, *key);
    const bool is_arguments = contains(keys.arguments, *key) && !arguments_seen;
    if (is_arguments && !call.name.empty() && text[value_begin] == '{') {
      // The name is known and the arguments are an object: they stream.
      arguments_seen = true;
      call.arguments = std::string(text.substr(value_begin, value.end - value_begin));
      call.state = State::open;
      // Broken off by a byte that cannot be JSON: it ends there.
      if (value.status == Status::invalid) return broken_at(value.end);
      if (value.status == Status::incomplete) {
        // Cut off inside its arguments: at the end of the text the call
        // closes as it stands.
        call.state = at_end ? State::closed : State::open;
        call.end = text.size();
        return call;
      }
      // Kept as written even when it is not valid JSON: a stream showed
      // the call from its name on and cannot take it back, so the whole
      // text reads the same (the client sees arguments that do not parse).
      call.state = State::open;
      position = value.end;
      continue;
    }
    if (value.status == Status::invalid) return broken_at(value_begin);
    if (value.status == Status::incomplete) break;
    const auto literal = text.substr(value_begin, value.end - value_begin);
    if (!is_valid(literal)) return broken_at(value_begin);
    if (is_name) {
      auto name = decode_string(literal);
      if (!name || name->empty()) return broken_at(value_begin);
      call.name = *name;
      if (arguments_seen) call.state = State::open;
    } else if (is_arguments) {
      arguments_seen = true;
      // A string holding JSON is unwrapped; any other value is kept as written.
      if (literal.front() == '"') {
        auto inner = decode_string(literal);
        pending_arguments = inner && is_valid(*inner) ? *inner : std::string(literal);
      } else {
        pending_arguments = std::string(literal);
      }
    }
    position = value.end;
  }
  // The text ended inside the object.
  if (at_end && call.state == State::open) {
    call.state = State::closed;
    call.end = text.size();
    return call;
  }
  if (at_end) return {State::not_a_call};
  if (call.state == State::open) return call;
  return {State::undecided};
}

}  // namespace mlx_cpp::chat::json_scan
