// What a model writes, through every tool-call format and the reasoning
// splitter, fed whole and in two pieces split where the first byte says:
// the parsers must never throw or crash, and a streamed answer must add up
// to the whole one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "chat/output_parser.h"
#include "chat/tool_call_format.h"

namespace {

mlx_cpp::chat::ParsedMessage parse(const mlx_cpp::chat::OutputFormat& format,
                                   const mlx_cpp::chat::OutputOptions& options,
                                   const std::string& text, size_t split) {
  mlx_cpp::chat::OutputParser parser(format, options);
  parser.feed(std::string_view(text).substr(0, split));
  parser.feed(std::string_view(text).substr(split));
  parser.finish();
  return parser.message();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t split = text.empty() ? 0 : data[0] % (text.size() + 1);
  static const auto names = mlx_cpp::chat::tool_call_format_names();
  mlx_cpp::chat::OutputOptions options;
  options.parse_tool_calls = true;
  options.tools.tools = {
      {{"type", "function"},
       {"function",
        {{"name", "get_weather"},
         {"parameters",
          {{"type", "object"},
           {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}}}}}}}};
  for (const auto& name : names) {
    mlx_cpp::chat::OutputFormat format;
    format.tool_calls = &mlx_cpp::chat::tool_call_format(name);
    format.reasoning = {"<think>", "</think>"};
    const auto whole = parse(format, options, text, text.size());
    const auto streamed = parse(format, options, text, split);
    if (whole.content != streamed.content || whole.reasoning != streamed.reasoning ||
        whole.tool_calls.size() != streamed.tool_calls.size())
      std::abort();  // a streamed answer that differs from the whole one
  }
  return 0;
}
