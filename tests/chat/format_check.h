#pragma once
// Checks shared by every tool-call format's tests: an answer parsed whole,
// and the same answer streamed in every split (at each byte boundary, and
// byte by byte), must give the same message, and no scan may take back
// what an earlier one showed.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "chat/tool_call_format.h"
#include "chat/tool_call_stream.h"

namespace mlx_cpp::chat::testing {

struct Message {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> calls;
};

inline void add_delta(Message& message, const OutputDelta& delta) {
  message.content += delta.content;
  message.reasoning += delta.reasoning;
  for (const auto& call : delta.tool_calls) {
    if (call.index >= static_cast<int>(message.calls.size())) {
      EXPECT_EQ(call.index, static_cast<int>(message.calls.size())) << "calls out of order";
      EXPECT_FALSE(call.name.empty()) << "a call's first delta carries its name";
      EXPECT_FALSE(call.id.empty()) << "a call's first delta carries its id";
      message.calls.push_back({call.id, call.name, ""});
    } else {
      EXPECT_TRUE(call.name.empty()) << "a call's name is sent once";
    }
    message.calls.back().arguments += call.arguments;
  }
}

// A function tool whose parameters are an object of these properties
// (null: no parameters).
inline nlohmann::ordered_json tool(const std::string& name, nlohmann::ordered_json properties) {
  nlohmann::ordered_json function = {{"name", name}};
  if (!properties.is_null())
    function["parameters"] = {{"type", "object"}, {"properties", std::move(properties)}};
  return {{"type", "function"}, {"function", std::move(function)}};
}

inline void expect_call(const Message& message, size_t index, const std::string& name,
                        const std::string& arguments) {
  ASSERT_LT(index, message.calls.size());
  EXPECT_EQ(message.calls[index].name, name);
  EXPECT_EQ(message.calls[index].arguments, arguments);
  EXPECT_TRUE(nlohmann::ordered_json::accept(message.calls[index].arguments))
      << message.calls[index].arguments;
}

inline nlohmann::ordered_json tools_named(const std::vector<std::string>& names) {
  auto tools = nlohmann::ordered_json::array();
  for (const auto& name : names)
    tools.push_back({{"type", "function"},
                     {"function", {{"name", name}, {"parameters", {{"type", "object"}}}}}});
  return tools;
}

// Feeds `pieces` in turn, then finishes.
inline Message stream_pieces(const ToolCallFormat& format, const std::vector<std::string>& pieces,
                             const ToolContext& context, int max_calls = 0) {
  ToolCallStream stream(format, context, max_calls);
  Message message;
  for (const auto& piece : pieces) add_delta(message, stream.feed(piece));
  add_delta(message, stream.finish());
  EXPECT_EQ(stream.contract_violations(), 0) << "a scan took back what it had shown";
  return message;
}

inline bool same_message(const Message& a, const Message& b) {
  if (a.content != b.content || a.reasoning != b.reasoning || a.calls.size() != b.calls.size())
    return false;
  for (size_t i = 0; i < a.calls.size(); ++i)
    if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments)
      return false;
  return true;
}

inline std::string describe(const Message& message) {
  std::string text = "content=[" + message.content + "] reasoning=[" + message.reasoning + "]";
  for (const auto& call : message.calls) text += " call " + call.name + " " + call.arguments;
  return text;
}

// The message `text` parses to, after checking every streamed split.
inline Message parse_checked(const ToolCallFormat& format, const std::string& text,
                             const ToolContext& context, int max_calls = 0) {
  const Message whole = stream_pieces(format, {text}, context, max_calls);
  for (size_t split = 1; split < text.size(); ++split) {
    auto parts =
        stream_pieces(format, {text.substr(0, split), text.substr(split)}, context, max_calls);
    EXPECT_TRUE(same_message(parts, whole))
        << "split at byte " << split << ": " << describe(parts) << "\n whole: " << describe(whole);
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  auto streamed = stream_pieces(format, bytes, context, max_calls);
  EXPECT_TRUE(same_message(streamed, whole))
      << "byte by byte: " << describe(streamed) << "\n whole: " << describe(whole);
  return whole;
}

inline Message parse_checked(const ToolCallFormat& format, const std::string& text,
                             const std::vector<std::string>& tool_names) {
  ToolContext context;
  context.tools = tools_named(tool_names);
  return parse_checked(format, text, context);
}

}  // namespace mlx_cpp::chat::testing
