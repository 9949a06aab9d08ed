// OpenAI's harmony (gpt-oss): the whole answer is messages, each a header
// then a body, e.g.
//   <|channel|>analysis<|message|>thinking<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>
//   <|start|>assistant to=functions.f<|channel|>commentary json<|message|>{...}<|call|>
//   <|start|>assistant<|channel|>final<|message|>The answer.<|return|>
// The generation prompt ends with `<|start|>assistant`, so the first header
// begins without it (with `<|channel|>`, or ` to=` for a recipient first).
// The analysis channel is reasoning; a message to `functions.NAME` is a call
// whose body is its JSON arguments; anything else is content, as is text a
// model writes outside any message. The markers are special tokens, never
// text a user should see, so they are dropped wherever they stand.
#include <array>
#include <optional>

#include "chat/call_grammar.h"
#include "chat/json_scan.h"
#include "chat/tool_call_formats.h"

namespace mlx_cpp::chat {
namespace {

enum class Marker { start, end, message, channel, constrain, return_, call };

constexpr std::array<std::string_view, 7> kMarkers = {"<|start|>",   "<|end|>",       "<|message|>",
                                                      "<|channel|>", "<|constrain|>", "<|return|>",
                                                      "<|call|>"};

std::string_view spelling(Marker marker) {
  return kMarkers[static_cast<size_t>(marker)];
}

bool ends_message(Marker marker) {
  return marker == Marker::end || marker == Marker::return_ || marker == Marker::call;
}
bool begins_header(Marker marker) {
  return marker == Marker::start || marker == Marker::channel;
}

struct MarkerAt {
  size_t begin = std::string_view::npos;
  Marker marker = Marker::start;
  size_t end() const { return begin + spelling(marker).size(); }
  bool found() const { return begin != std::string_view::npos; }
};

std::optional<Marker> marker_at(std::string_view text, size_t position) {
  for (size_t i = 0; i < kMarkers.size(); ++i)
    if (text.compare(position, kMarkers[i].size(), kMarkers[i]) == 0) return Marker(i);
  return std::nullopt;
}

// The first whole marker in text[from, text.size()).
MarkerAt next_marker(std::string_view text, size_t from) {
  for (size_t at = text.find("<|", from); at != std::string_view::npos;
       at = text.find("<|", at + 1)) {
    if (auto marker = marker_at(text, at)) return {at, *marker};
  }
  return {};
}

// Where a marker may be arriving at the end of text[from..] (a proper prefix
// of one), else text.size().
size_t partial_marker_begin(std::string_view text, size_t from) {
  const size_t earliest = text.size() > 12 ? std::max(from, text.size() - 12) : from;
  for (size_t at = earliest; at < text.size(); ++at) {
    if (text[at] != '<') continue;
    const auto rest = text.substr(at);
    for (auto marker : kMarkers)
      if (marker.size() > rest.size() && marker.substr(0, rest.size()) == rest) return at;
  }
  return text.size();
}

size_t trim_end(std::string_view text, size_t begin, size_t end) {
  while (end > begin && json_scan::is_space(text[end - 1])) --end;
  return end;
}

// A header longer than this, or one holding a line break, is not a header
// after all (a channel, a recipient and a content type are a few words).
constexpr size_t kMaxHeaderBytes = 256;
constexpr size_t kMaxHeaderWordBytes = 32;

struct Header {
  enum class Status {
    undecided,  // still being written
    truncated,  // cut short by the end of the answer
    malformed,
    complete,
  } status = Status::undecided;
  std::string channel;
  std::string recipient;
  size_t body_begin = 0;  // complete: just past <|message|>
};

// The word at text[position..], up to a space or a marker.
std::string_view word_at(std::string_view text, size_t position, size_t end) {
  size_t stop = position;
  while (stop < end && !json_scan::is_space(text[stop]) && text[stop] != '<') ++stop;
  return text.substr(position, stop - position);
}

// The words of a header: `<|channel|>NAME`, `to=RECIPIENT`, and others
// (the role, the content type: json, `<|constrain|>json`) that say nothing
// about where the body goes.
void read_header_words(std::string_view text, size_t begin, size_t end, Header& header) {
  size_t position = begin;
  while (position < end) {
    if (json_scan::is_space(text[position])) {
      ++position;
      continue;
    }
    auto marker = marker_at(text, position);
    if (marker.has_value()) {
      position += spelling(*marker).size();
      if (*marker == Marker::channel) header.channel = word_at(text, position, end);
      position += word_at(text, position, end).size();
      continue;
    }
    const auto word = word_at(text, position, end);
    if (word.starts_with("to=")) header.recipient = word.substr(3);
    position += std::max<size_t>(word.size(), 1);
  }
}

Header with_status(Header::Status status) {
  Header header;
  header.status = status;
  return header;
}

Header read_header(std::string_view text, size_t begin, bool at_end) {
  Header header;
  size_t position = begin;
  while (true) {
    const MarkerAt next = next_marker(text, position);
    const size_t stop = next.found() ? next.begin : text.size();
    const auto words = text.substr(begin, stop - begin);
    if (words.find('\n') != std::string_view::npos || words.size() > kMaxHeaderBytes)
      return with_status(Header::Status::malformed);
    if (!next.found())
      return with_status(at_end ? Header::Status::truncated : Header::Status::undecided);
    if (next.marker == Marker::message) {
      read_header_words(text, begin, next.begin, header);
      header.status = Header::Status::complete;
      header.body_begin = next.end();
      return header;
    }
    if (next.marker != Marker::channel && next.marker != Marker::constrain)
      return with_status(Header::Status::malformed);
    position = next.end();
  }
}

class HarmonyFormat : public ToolCallFormat {
 public:
  std::string_view name() const override { return "harmony"; }
  bool parses_reasoning() const override { return true; }
  // The analysis channel ends; the final channel opens.
  ThinkingMarkup thinking_markup() const override {
    return {"<|channel|>analysis<|message|>", "<|end|>",
            "<|end|><|start|>assistant<|channel|>final<|message|>"};
  }
  std::vector<std::string> marker_tokens() const override {
    return {kMarkers.begin(), kMarkers.end()};
  }
  // One commentary message to functions.NAME with JSON arguments, ended by
  // <|call|> (which ends the turn: one call).
  std::optional<nlohmann::ordered_json> forced_calls(const CallForcing& forcing) const override {
    using namespace call_grammar;
    auto call = [&](const ForcedTool& tool) {
      return sequence({marker("<|channel|>"), text("commentary to=functions." + tool.name + " "),
                       marker("<|constrain|>"), text("json"), marker("<|message|>"),
                       arguments(tool.parameters), marker("<|call|>")});
    };
    return any_tool(forcing.tools, call);
  }
  bool renders(std::string_view rendered) const override {
    // What gpt-oss's template writes for a call: `<|start|>assistant
    // to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>`.
    // A template's source (when it refuses the probe) spells the recipient
    // in pieces, but writes the channel and the call's end marker.
    auto holds = [&](std::string_view word) {
      return rendered.find(word) != std::string_view::npos;
    };
    return (holds("to=functions.") && holds("<|message|>")) ||
           (holds("<|channel|>") && holds("<|call|>"));
  }

  Scan scan(std::string_view text, size_t from, bool at_end,
            const ToolContext& context) const override {
    Scan scan;
    scan.settled = from;
    auto settle = [&](size_t at) {
      scan.settled = at;
      scan.settled_pieces = scan.pieces.size();
    };
    // Only the answer's first header may begin without a marker: the
    // generation prompt wrote its `<|start|>assistant`.
    bool answer_start = from == 0;
    size_t position = from;
    while (true) {
      const size_t begin = json_scan::skip_space(text, position);
      if (begin == text.size()) break;
      const auto marker = marker_at(text, begin);
      const bool bare_recipient = answer_start && text.compare(begin, 3, "to=") == 0;
      if (!marker.has_value() && !bare_recipient && !at_end &&
          may_begin_header(text, begin, answer_start))
        break;
      answer_start = false;
      if (!marker.has_value() && !bare_recipient) {
        // Text outside any message is content, up to the next marker.
        const MarkerAt next = next_marker(text, begin);
        if (!next.found()) {
          const size_t end =
              at_end ? text.size() : trim_end(text, begin, partial_marker_begin(text, begin));
          add_text(scan, PieceKind::content, text.substr(begin, end - begin));
          break;
        }
        add_text(scan, PieceKind::content,
                 text.substr(begin, trim_end(text, begin, next.begin) - begin));
        position = next.begin;
        settle(position);
        continue;
      }
      if (marker.has_value() && !begins_header(*marker)) {
        // A marker out of place (an <|end|> with no message open): dropped.
        position = begin + spelling(*marker).size();
        settle(position);
        continue;
      }
      const size_t header_begin =
          marker == Marker::start ? begin + spelling(Marker::start).size() : begin;
      const Header header = read_header(text, header_begin, at_end);
      if (header.status == Header::Status::undecided) break;
      // A header cut short by the end of the answer shows nothing, unless no
      // marker began it: then it was text all along.
      if (header.status == Header::Status::truncated && marker.has_value()) break;
      if (header.status != Header::Status::complete) {
        // Not a header after all: its opening marker and first word (the
        // role, or the channel) are dropped and the rest read as content.
        if (!marker.has_value()) continue;
        position = begin + spelling(*marker).size();
        // (A word too long to be either is kept: it may still be growing.)
        const size_t word = word_at(text, position, text.size()).size();
        if (word <= kMaxHeaderWordBytes) position += word;
        settle(position);
        continue;
      }
      const Body body = read_body(text, header.body_begin, at_end);
      const bool closed = body.end_marker.found() || at_end;
      add_message(scan, header, context, body.text, closed);
      if (!body.end_marker.found()) break;
      position =
          ends_message(body.end_marker.marker) ? body.end_marker.end() : body.end_marker.begin;
      settle(position);
    }
    return scan;
  }

 private:
  struct Body {
    std::string text;  // without stray markers, and without a partial one at the end
    MarkerAt end_marker;
  };

  // Whether text[begin..] (all of it) could still become a marker, or a
  // first header's ` to=`.
  static bool may_begin_header(std::string_view text, size_t begin, bool answer_start) {
    const auto rest = text.substr(begin);
    if (answer_start && rest.size() < 3 && std::string_view("to=").starts_with(rest)) return true;
    return partial_marker_begin(text, begin) == begin;
  }

  // A message's body runs to the marker that ends it (<|end|>, <|call|>,
  // <|return|>) or to the next header when that marker is missing; other
  // markers inside it are dropped.
  static Body read_body(std::string_view text, size_t begin, bool at_end) {
    Body body;
    size_t position = begin;
    while (true) {
      const MarkerAt next = next_marker(text, position);
      if (!next.found()) {
        const size_t end = at_end ? text.size() : partial_marker_begin(text, position);
        body.text.append(text.substr(position, end - position));
        return body;
      }
      body.text.append(text.substr(position, next.begin - position));
      if (ends_message(next.marker) || begins_header(next.marker)) {
        body.end_marker = next;
        return body;
      }
      position = next.end();
    }
  }

  static void add_message(Scan& scan, const Header& header, const ToolContext& context,
                          const std::string& body, bool closed) {
    if (auto call_name = called_function(header, context)) {
      // Arguments that may still grow keep their trailing spaces back, so
      // that what is shown stays a prefix of what the call ends with.
      const size_t begin = json_scan::skip_space(body, 0);
      std::string arguments = body.substr(begin, trim_end(body, begin, body.size()) - begin);
      if (closed && arguments.empty()) arguments = "{}";
      Piece piece;
      piece.kind = PieceKind::call;
      piece.call = {"", std::move(*call_name), std::move(arguments)};
      piece.closed = closed;
      scan.pieces.push_back(std::move(piece));
      return;
    }
    add_text(scan, header.channel == "analysis" ? PieceKind::reasoning : PieceKind::content, body);
  }

  // The function a message calls: `to=functions.NAME`, or a bare recipient
  // that names an offered tool. Other recipients (gpt-oss's built-in
  // browser and python) are no call of ours; their body goes by its channel.
  static std::optional<std::string> called_function(const Header& header,
                                                    const ToolContext& context) {
    std::string_view recipient = header.recipient;
    constexpr std::string_view kNamespace = "functions.";
    if (recipient.starts_with(kNamespace) && recipient.size() > kNamespace.size())
      return std::string(recipient.substr(kNamespace.size()));
    if (!recipient.empty() && context.offers(recipient)) return std::string(recipient);
    return std::nullopt;
  }

  static void add_text(Scan& scan, PieceKind kind, std::string_view text) {
    if (text.empty()) return;
    Piece piece;
    piece.kind = kind;
    piece.text = std::string(text);
    scan.pieces.push_back(std::move(piece));
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_harmony_format() {
  return std::make_unique<HarmonyFormat>();
}

}  // namespace mlx_cpp::chat
