// Cohere's Command models.
//   Command R7B writes its plan, then a JSON list of calls, or its answer,
//   each between special tokens:
//     <|START_THINKING|>plan<|END_THINKING|>
//     <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}}]<|END_ACTION|>
//     <|START_RESPONSE|>answer<|END_RESPONSE|>
//   The plan is reasoning; the response tokens are dropped, their text kept
//   as content.
//   Command R / R+ (older) write the list in a fenced block on its own line:
//     Action: ```json\n[{"tool_name": "f", "parameters": {...}}]\n```
// The calls in a list stream one by one, each name first, then its
// arguments. The model's tool_call_id ("0", "1", ...) repeats from turn to
// turn, so the calls get ids of their own.
#include <optional>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/region_format.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

using json_scan::ObjectCall;
using State = ObjectCall::State;

constexpr std::string_view kStartThinking = "<|START_THINKING|>";
constexpr std::string_view kEndThinking = "<|END_THINKING|>";
constexpr std::string_view kStartAction = "<|START_ACTION|>";
constexpr std::string_view kEndAction = "<|END_ACTION|>";
constexpr std::string_view kStartResponse = "<|START_RESPONSE|>";
constexpr std::string_view kEndResponse = "<|END_RESPONSE|>";
constexpr std::string_view kAction = "Action:";
constexpr std::string_view kFence = "```";

const json_scan::CallKeys kCallKeys = {{"tool_name"}, {"parameters"}};

// Whether text[position..] starts with `word`, may still (nullopt), or not.
std::optional<bool> starts_with(std::string_view text, size_t position, std::string_view word) {
  const auto rest = text.substr(std::min(position, text.size()));
  if (rest.size() >= word.size()) return rest.substr(0, word.size()) == word;
  if (word.substr(0, rest.size()) == rest) return std::nullopt;
  return false;
}

bool at_line_start(std::string_view text, size_t position) {
  return position == 0 || text[position - 1] == '\n';
}

// Where `marker` begins a line at or after `from`, or where the text ends in
// a prefix of it that begins a line.
RegionStart find_line_marker(std::string_view text, size_t from, std::string_view marker) {
  for (size_t at = text.find(marker, from); at != std::string_view::npos;
       at = text.find(marker, at + 1))
    if (at_line_start(text, at)) return {RegionStart::Status::found, at};
  for (size_t begin = std::max(from, text.size() - std::min(text.size(), marker.size() - 1));
       begin < text.size(); ++begin)
    if (at_line_start(text, begin) && marker.starts_with(text.substr(begin)))
      return {RegionStart::Status::partial, begin};
  return {};
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

size_t trim_end(std::string_view text, size_t begin, size_t end) {
  while (end > begin && json_scan::is_space(text[end - 1])) --end;
  return end;
}

// [{"tool_name": ..., "parameters": ...}, ...] starting at text[bracket].
// Closed at the ']', or after the last call where what follows is no call
// (content then).
Region read_call_list(std::string_view text, size_t bracket, bool at_end) {
  Region region;
  size_t position = json_scan::skip_space(text, bracket + 1);
  size_t calls_end = bracket;
  while (position < text.size()) {
    if (text[position] == ']') return closed(std::move(region), position + 1);
    ObjectCall call = json_scan::read_object_call(text, position, at_end, kCallKeys);
    // read_object_call leaves an object cut short inside its arguments open,
    // even at the end; at the end it is a call as it stands.
    if (at_end && call.state == State::open) {
      call.state = State::closed;
      call.end = text.size();
    }
    if (call.state == State::undecided) return open(std::move(region));
    if (call.state == State::not_a_call)
      return region.pieces.empty() ? Region{} : closed(std::move(region), calls_end);
    region.pieces.push_back(call_piece(call.name, call.arguments, call.state == State::closed));
    if (call.state == State::open) return open(std::move(region));
    calls_end = call.end;
    position = json_scan::skip_space(text, call.end);
    if (position < text.size() && text[position] == ',')
      position = json_scan::skip_space(text, position + 1);
    else if (position < text.size() && text[position] != ']')
      return closed(std::move(region), calls_end);
  }
  if (!at_end) return open(std::move(region));
  return region.pieces.empty() ? Region{} : closed(std::move(region), calls_end);
}

// After a closed list: the closing marker, where the model writes it.
Region expect_closer(std::string_view text, Region list, bool at_end, std::string_view closer) {
  if (list.status != Region::Status::closed) return list;
  const size_t position = json_scan::skip_space(text, list.end);
  const auto has_closer = starts_with(text, position, closer);
  if (!has_closer.has_value() && !at_end) return open(std::move(list));
  if (has_closer.value_or(false)) list.end = position + closer.size();
  return list;
}

class CommandRFormat : public RegionFormat {
 public:
  std::string_view name() const override { return "command_r"; }
  bool renders(std::string_view rendered) const override {
    return rendered.find(kStartAction) != std::string_view::npos ||
           rendered.find("\"tool_name\"") != std::string_view::npos;
  }
  std::vector<std::string> marker_tokens() const override {
    return {std::string(kStartThinking), std::string(kEndThinking),   std::string(kStartAction),
            std::string(kEndAction),     std::string(kStartResponse), std::string(kEndResponse)};
  }
  // A JSON list of {"tool_call_id", "tool_name", "parameters"}: between
  // action tokens (Command R7B) or after "Action:" in a fenced block.
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence(
          {text("{\"tool_call_id\": \""), pattern("[0-9]{1,2}"),
           text("\", \"tool_name\": \"" + json_string_body(tool.name) + "\", \"parameters\": "),
           arguments(tool.parameters), text("}")});
    };
    auto list = sequence(
        {text("["), calls(any_tool(forcing.tools, call), text(", "), forcing.several), text("]")});
    if (forcing.rendered_call.find(kStartAction) != std::string_view::npos)
      return sequence(
          {marker(std::string(kStartAction)), std::move(list), marker(std::string(kEndAction))});
    return sequence({text(std::string(kAction) + " " + std::string(kFence) + "json\n"),
                     std::move(list), text("\n" + std::string(kFence))});
  }
  bool parses_reasoning() const override { return true; }

 protected:
  RegionStart find_start(std::string_view text, size_t from, const ToolContext&) const override {
    RegionStart start = find_line_marker(text, from, kAction);
    for (auto marker : {kStartThinking, kStartAction, kStartResponse, kEndResponse})
      start = earliest(start, find_marker(text, from, marker));
    return start;
  }

  Region read_region(std::string_view text, size_t begin, bool at_end,
                     const ToolContext&) const override {
    const auto rest = text.substr(begin);
    if (rest.starts_with(kStartThinking))
      return read_thinking(text, begin + kStartThinking.size(), at_end);
    if (rest.starts_with(kStartAction)) return read_action(text, begin, at_end);
    if (rest.starts_with(kStartResponse)) return closed({}, begin + kStartResponse.size());
    if (rest.starts_with(kEndResponse)) return closed({}, begin + kEndResponse.size());
    return read_fenced_action(text, begin + kAction.size(), at_end);
  }

 private:
  // The plan streams as reasoning; whitespace at its ends, and what may be
  // the start of the end marker, wait until the text goes on.
  static Region read_thinking(std::string_view text, size_t position, bool at_end) {
    const size_t body = json_scan::skip_space(text, position);
    const RegionStart end = find_marker(text, body, kEndThinking);
    const bool ended = end.status == RegionStart::Status::found;
    const size_t body_end =
        ended || (!at_end && end.status == RegionStart::Status::partial) ? end.begin : text.size();
    Region region;
    const size_t visible_end = trim_end(text, body, body_end);
    if (visible_end > body) {
      Piece reasoning;
      reasoning.kind = PieceKind::reasoning;
      reasoning.text = std::string(text.substr(body, visible_end - body));
      region.pieces.push_back(std::move(reasoning));
    }
    if (ended) return closed(std::move(region), end.begin + kEndThinking.size());
    return at_end ? closed(std::move(region), text.size()) : open(std::move(region));
  }

  static Region read_action(std::string_view text, size_t begin, bool at_end) {
    const size_t position = json_scan::skip_space(text, begin + kStartAction.size());
    if (position >= text.size()) return at_end ? Region{} : open({});
    if (text[position] != '[') return {};
    return expect_closer(text, read_call_list(text, position, at_end), at_end, kEndAction);
  }

  // Action: ```json [...] ``` (the fence and its "json" tag are optional).
  static Region read_fenced_action(std::string_view text, size_t position, bool at_end) {
    const Region undecided = at_end ? Region{} : open({});
    position = json_scan::skip_space(text, position);
    const auto fenced = starts_with(text, position, kFence);
    if (!fenced.has_value()) return undecided;
    if (*fenced) {
      position += kFence.size();
      const auto json_tag = starts_with(text, position, "json");
      if (!json_tag.has_value()) return undecided;
      if (*json_tag) position += 4;
      position = json_scan::skip_space(text, position);
    }
    if (position >= text.size()) return undecided;
    if (text[position] != '[') return {};
    Region list = read_call_list(text, position, at_end);
    return *fenced ? expect_closer(text, std::move(list), at_end, kFence) : list;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_command_r_format() {
  return std::make_unique<CommandRFormat>();
}

}  // namespace mlx_cpp::chat
