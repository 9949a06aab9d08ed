#pragma once
// Reading JSON that is still arriving: where a value ends (or that it has
// not ended yet), and a call object's "name" and "arguments" while its
// arguments are still being written. Used by every format that writes
// calls as JSON.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlx_cpp::chat::json_scan {

enum class Status { complete, incomplete, invalid };

struct Extent {
  Status status = Status::incomplete;
  size_t end = 0;  // complete: one past the value's last byte
};

size_t skip_space(std::string_view text, size_t position);
bool is_space(char c);
// The extent of the JSON value starting at text[begin] (not whitespace).
// Structure only (strings, escapes, nesting); a complete value is then
// checked by a real parser before it is trusted. A number or literal at the
// very end is incomplete unless at_end.
Extent value_extent(std::string_view text, size_t begin, bool at_end);
// Whether text is one valid JSON value.
bool is_valid(std::string_view text);
// The decoded value of a complete JSON string literal.
std::optional<std::string> decode_string(std::string_view literal);

// A call written as a JSON object: {"name": "f", "arguments": {...}} (the
// key names vary by format). The object's fields are read in order: when
// the name comes before the arguments, the arguments stream as they are
// written; otherwise the call appears only once the object is whole.
struct CallKeys {
  std::vector<std::string> name = {"name"};
  std::vector<std::string> arguments = {"arguments", "parameters"};
};

struct ObjectCall {
  enum class State {
    not_a_call,  // not an object of this shape (or malformed)
    undecided,   // could still become one
    open,        // name known, arguments so far in `arguments`
    closed,      // the whole object is read; `end` is one past its '}'
  } state = State::undecided;
  std::string name;
  std::string arguments;  // raw JSON text of the value (a string's decoded text)
  size_t end = 0;
};

ObjectCall read_object_call(std::string_view text, size_t begin, bool at_end,
                            const CallKeys& keys = {});

}  // namespace mlx_cpp::chat::json_scan
