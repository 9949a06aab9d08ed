#include "template/chat_template.h"

#include "io/error.h"
#include "template/ast.h"
#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/parser.h"

namespace mlx_cpp {
namespace {

// transformers' _alias_reasoning_fields: the first non-null of these names
// becomes "thinking" (placed first unless present) and "reasoning_content".
nlohmann::ordered_json alias_reasoning_fields(const nlohmann::ordered_json& message) {
  static const char* const kReasoningFields[] = {"reasoning_content", "thinking", "reasoning"};
  const nlohmann::ordered_json* reasoning = nullptr;
  for (const char* field : kReasoningFields) {
    auto found = message.find(field);
    if (found != message.end() && !found->is_null()) {
      reasoning = &*found;
      break;
    }
  }
  if (!reasoning) return message;
  nlohmann::ordered_json aliased = nlohmann::ordered_json::object();
  aliased["thinking"] = *reasoning;
  for (const auto& [key, value] : message.items()) aliased[key] = value;
  aliased["thinking"] = *reasoning;
  aliased["reasoning_content"] = *reasoning;
  return aliased;
}

}  // namespace

nlohmann::ordered_json normalize_chat_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) throw Error("chat template: messages must be a list");
  nlohmann::ordered_json normalized = nlohmann::ordered_json::array();
  for (const auto& message : messages) {
    if (!message.is_object()) {
      throw Error("chat template: each message must be an object, got " + message.dump());
    }
    nlohmann::ordered_json kept = nlohmann::ordered_json::object();
    for (const auto& [key, value] : message.items()) {
      if (!value.is_null()) kept[key] = value;
    }
    normalized.push_back(alias_reasoning_fields(kept));
  }
  return normalized;
}

ChatTemplate::ChatTemplate(const std::string& source, TemplateLimits limits)
    : tree_(std::make_unique<jinja::TemplateTree>(jinja::parse_template(source))),
      limits_(limits) {}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) throw Error("chat template: context must be a JSON object");
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  auto messages = context.find("messages");
  variables["messages"] = messages == context.end() ? nlohmann::ordered_json::array()
                                                    : normalize_chat_messages(*messages);
  variables["tools"] = nullptr;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = false;
  for (const auto& [key, value] : context.items()) {
    if (key != "messages") variables[key] = value;
  }
  return render_raw(variables);
}

std::string ChatTemplate::render_raw(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw Error("chat template: variables must be a JSON object");
  auto globals = std::make_shared<jinja::Frame>();
  jinja::add_global_functions(globals->variables);
  auto context = std::make_shared<jinja::Frame>();
  context->parent = globals;
  for (const auto& [key, value] : variables.items()) {
    context->assign(key, jinja::Value::from_json(value));
  }
  return jinja::Interpreter(*tree_, context, limits_).render();
}

std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context) {
  return ChatTemplate(source).render(context);
}

}  // namespace mlx_cpp
