#pragma once
// One tool-call format: how a model family writes calls inside its answer
// (Hermes' <tool_call>{json}</tool_call>, Mistral's [TOOL_CALLS], ...).
// A format is a pure function from text to pieces; ToolCallStream drives it
// for streams and whole answers alike, so there is one definition of each
// format for both.
//
// The contract every format keeps (tests/chat check it by feeding every
// answer split at every byte): scanning a longer text never takes back what
// a shorter one showed. Pieces are only appended, and only the last one
// grows (text appended, arguments appended, `closed` turning true). Text
// that might still become markup is left out of the pieces until it is
// decided (held back), and a call appears only once its name is certain.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlx_cpp::chat {

struct ToolCall {
  std::string id;  // the model's own id where its format writes one
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's function.arguments
};

enum class PieceKind { content, reasoning, call };

struct Piece {
  PieceKind kind = PieceKind::content;
  std::string text;     // content or reasoning
  ToolCall call;        // kind == call: arguments so far
  bool closed = false;  // a call whose markup has ended (arguments whole)
};

struct Scan {
  std::vector<Piece> pieces;
  // The first `settled_pieces` pieces end at byte `settled` (an offset in
  // the whole text) and are final; a scan from `settled` gives the remaining
  // pieces. The stream then scans from there, so long answers are read once.
  size_t settled = 0;
  size_t settled_pieces = 0;
};

// What the request offered: the tools (OpenAI's [{type, function: {name,
// parameters}}]) whose schemas some formats read to type their arguments.
struct ToolContext {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  bool offers(std::string_view name) const;
  // The JSON schema of a tool's parameters (null when unknown).
  const nlohmann::ordered_json* parameters_of(std::string_view name) const;
};

// A think block as an engine that limits thinking reads it: the start and
// end markup as the text shows them, and what to write to end the block
// (end, and whatever the model writes after it before its answer).
struct ThinkingMarkup {
  std::string start, end, close;
  bool empty() const { return end.empty(); }
};

// What a grammar that forces calls (tool_choice required or named) must
// let the model write: calls to these tools, one or several.
struct ForcedTool {
  std::string name;
  nlohmann::ordered_json parameters;  // the arguments' JSON schema
};
struct CallForcing {
  std::vector<ForcedTool> tools;
  bool several = false;
  // How the chat template writes a call (its rendering of a probe
  // conversation, see tool_call_detection.h), for formats with variants.
  std::string_view rendered_call;
};

enum class CallIdStyle {
  openai,        // "call_" and 24 alphanumerics
  nine_letters,  // exactly 9 alphanumerics: Mistral's templates refuse any other
};

class ToolCallFormat {
 public:
  virtual ~ToolCallFormat() = default;
  virtual std::string_view name() const = 0;
  // Pieces for text[from..]: `text` is the whole answer so far, and from a
  // point an earlier scan settled (what lies before it is context only, for
  // formats that look back, e.g. at the start of a line). With at_end,
  // nothing more will come: held text is released as content and open calls
  // are closed as they stand.
  virtual Scan scan(std::string_view text, size_t from, bool at_end,
                    const ToolContext& context) const = 0;
  // Whether a chat template's rendering of a probe call (see
  // chat_format.cpp) is written in this format.
  virtual bool renders(std::string_view rendered_call) const = 0;
  // Special tokens the format's markup uses, which the detokenizer must
  // keep in the text for it to see them.
  virtual std::vector<std::string> marker_tokens() const { return {}; }
  virtual CallIdStyle id_style() const { return CallIdStyle::openai; }
  // The format finds reasoning itself, so it runs even when no tools are
  // offered and no think-tag splitter runs before it.
  virtual bool parses_reasoning() const { return false; }
  // Where the format finds reasoning itself: its markup.
  virtual ThinkingMarkup thinking_markup() const { return {}; }
  // The calls as an xgrammar structural-tag format (see call_grammar.h),
  // in the format's own markup from the first token; none when the format
  // cannot be written by a grammar.
  virtual std::optional<nlohmann::ordered_json> forced_calls(const CallForcing&) const {
    return std::nullopt;
  }
};

// Every format, in the order detection asks them (the more specific first).
const std::vector<std::unique_ptr<ToolCallFormat>>& tool_call_formats();
// The format called `name`; throws mlx_cpp::Error listing the names.
const ToolCallFormat& tool_call_format(std::string_view name);
std::vector<std::string> tool_call_format_names();

}  // namespace mlx_cpp::chat
