#pragma once
// Scripts of a thinking, tool-calling model for the agent API's HTTP tests
// (chat completions, Anthropic's Messages, OpenAI's Responses), and the
// named SSE events the last two stream.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/tool_call_format.h"
#include "server_fixture.h"

namespace mlx_cpp::server::testing {

// Reasoning, text, then a Hermes call to get_weather.
inline const std::string kThinkingCall =
    "<think>\nThe user wants weather.\n</think>\n\nLet me look.\n<tool_call>\n{\"name\": "
    "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

// A model that writes Hermes calls and thinks in <think> tags, replying `reply`.
inline FakeScript hermes_thinker(const std::string& reply) {
  FakeScript script;
  script.reply = reply;
  script.context_size = 4096;
  script.output_format.tool_calls = &chat::tool_call_format("hermes");
  script.output_format.tool_calls_from_template = true;
  script.output_format.reasoning = {"<think>", "</think>"};
  return script;
}

struct Event {
  std::string name;
  Json data;
};

// "event: NAME\ndata: JSON\n\n" frames, each data's type the event's name.
inline std::vector<Event> named_events(const std::string& body) {
  std::vector<Event> events;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find("\n\n", start);
    if (end == std::string::npos) break;
    const std::string frame = body.substr(start, end - start);
    start = end + 2;
    const size_t newline = frame.find('\n');
    EXPECT_EQ(frame.rfind("event: ", 0), 0u) << frame;
    EXPECT_EQ(frame.compare(newline + 1, 6, "data: "), 0) << frame;
    events.push_back({frame.substr(7, newline - 7), Json::parse(frame.substr(newline + 7))});
    EXPECT_EQ(events.back().data["type"], events.back().name);
  }
  return events;
}

inline std::vector<std::string> names_of(const std::vector<Event>& events) {
  std::vector<std::string> names;
  for (const auto& event : events) names.push_back(event.name);
  return names;
}

}  // namespace mlx_cpp::server::testing
