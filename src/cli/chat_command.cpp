// mlx-cpp chat: an interactive multi-turn conversation. Each turn re-renders
// the conversation with the model's chat template; the session's cache
// keeps the common prefix, so only the new text is prefilled. Ctrl-C stops
// the current answer, Ctrl-D or /exit ends the chat. When stdin is not a
// terminal, each line is one user message (scriptable). Answers go through
// the answer parser: a model's reasoning is shown apart (dimmed on a
// terminal, between "[thinking]" lines otherwise) and kept out of the
// content the conversation carries on with.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "chat/output_parser.h"
#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/adapter_registry.h"
#include "engine/session.h"
#include "io/error.h"

namespace mlx_cpp::cli {
namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted = true;
}

// SIGINT without SA_RESTART: a blocked read returns, generation checks the flag.
void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
}

struct ChatArguments {
  std::string model = kDefaultModel;
  std::string system;
  int max_tokens = 512;
  SamplingArguments sampling;
  int context_size = 0;
  std::string kernels = "fast";
  SpeculativeArguments speculative;
  KvCacheArguments kv_cache;
  std::string chat_template_file;
  int reasoning_budget = -1;
  std::vector<std::string> adapters;
};

class Chat {
 public:
  Chat(const ChatArguments& args, std::unique_ptr<Session> session)
      : args_(args),
        session_(std::move(session)),
        interactive_(isatty(STDIN_FILENO)),
        color_(isatty(STDOUT_FILENO)) {
    adapters_ = load_adapter_stack(session_->runtime().model(),
                                   {args.adapters.begin(), args.adapters.end()});
    reset(args.system);
  }

  void run() {
    if (interactive_)
      std::cerr << "Chatting with " << args_.model
                << ". Commands: /reset, /system TEXT, /exit (Ctrl-D). Ctrl-C stops an answer.\n";
    std::string line;
    while (true) {
      if (interactive_) std::cout << "\n>>> " << std::flush;
      interrupted = false;
      if (!std::getline(std::cin, line)) {
        if (interrupted && interactive_) {  // Ctrl-C at the prompt: keep chatting
          std::cin.clear();
          std::cout << "\n(Ctrl-D or /exit quits)";
          continue;
        }
        break;  // Ctrl-D / end of input
      }
      if (line == "/exit" || line == "/quit") break;
      if (line == "/reset") {
        reset(system_);
        std::cerr << "[conversation cleared]\n";
        continue;
      }
      if (line.rfind("/system", 0) == 0) {
        reset(line.size() > 8 ? line.substr(8) : "");
        std::cerr << "[system message set; conversation cleared]\n";
        continue;
      }
      if (line.empty()) continue;
      answer(line);
    }
  }

 private:
  void reset(const std::string& system) {
    system_ = system;
    messages_ = nlohmann::ordered_json::array();
    if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
  }

  // Prints the parser's output as it comes: reasoning apart from content.
  void show(const chat::OutputDelta& delta) {
    if (!delta.reasoning.empty()) {
      if (!in_reasoning_) std::cout << (color_ ? "\033[2m" : "[thinking]\n");
      in_reasoning_ = true;
      std::cout << delta.reasoning;
    }
    if (!delta.content.empty()) {
      if (in_reasoning_) std::cout << (color_ ? "\033[0m\n\n" : "\n[/thinking]\n");
      in_reasoning_ = false;
      std::cout << delta.content;
    }
    std::cout << std::flush;
  }

  void answer(const std::string& user_text) {
    messages_.push_back({{"role", "user"}, {"content", user_text}});
    TextRequest request;
    const std::string prompt = session_->render_chat(messages_, nullptr, true);
    request.prompt_ids = session_->encode(prompt, false);
    const auto& format = session_->runtime().output_format();
    request.thinking = thinking_budget(format, args_.reasoning_budget, prompt);
    chat::OutputOptions options;
    options.starts_in_reasoning = chat::prompt_opens_reasoning(prompt, format.reasoning);
    chat::OutputParser parser(format, options);
    in_reasoning_ = false;
    request.options.max_tokens = args_.max_tokens;
    request.options.sampler = args_.sampling.to_options();
    request.options.speculative = args_.speculative.to_options();
    request.options.kv_cache = args_.kv_cache.to_scheme();
    request.options.adapters = adapters_;
    auto result = session_->generate(request, [&](const TextChunk& chunk) {
      show(parser.feed(chunk.text));
      return !interrupted.load();
    });
    show(parser.finish());
    if (in_reasoning_) std::cout << (color_ ? "\033[0m" : "\n[/thinking]");
    std::cout << std::endl;  // flushed before the stats go to stderr
    if (result.finish_reason == "cancelled") std::cerr << "[stopped]\n";
    nlohmann::ordered_json reply = {{"role", "assistant"}, {"content", parser.message().content}};
    if (!parser.message().reasoning.empty())
      reply["reasoning_content"] = parser.message().reasoning;
    messages_.push_back(std::move(reply));
    const auto& stats = result.stats;
    std::fprintf(
        stderr,
        "[prompt: %d new + %d cached tokens, %.1f tok/s | generation: %d tokens, %.1f tok/s]\n",
        stats.prompt_tokens, result.cached_prompt_tokens, stats.prompt_tokens_per_second(),
        stats.generated_tokens, stats.generation_tokens_per_second());
  }

  ChatArguments args_;
  std::shared_ptr<const AdapterStack> adapters_;
  std::unique_ptr<Session> session_;
  bool interactive_;
  bool color_;                 // stdout is a terminal: reasoning is dimmed
  bool in_reasoning_ = false;  // the answer's reasoning is being printed
  std::string system_;
  nlohmann::ordered_json messages_;
};

}  // namespace

void register_chat_command(CLI::App& app) {
  auto args = std::make_shared<ChatArguments>();
  auto* command =
      app.add_subcommand("chat", "Interactive multi-turn chat (one message per line from a pipe)");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("--system", args->system, "System message");
  command->add_option("--max-tokens", args->max_tokens, "Maximum tokens per answer")
      ->capture_default_str();
  add_sampling_options(command, args->sampling);
  command->add_option("--ctx-size", args->context_size, "Context size in tokens");
  add_kernels_option(command, args->kernels);
  add_speculative_options(command, args->speculative);
  add_kv_cache_options(command, args->kv_cache);
  add_adapter_option(command, args->adapters);
  command
      ->add_option("--chat-template-file", args->chat_template_file,
                   "A Jinja chat template to use instead of the model's")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--reasoning-budget", args->reasoning_budget,
                   "Reasoning tokens an answer may use before its think block is closed (-1: no "
                   "limit)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 30));
  command->callback([args] {
    const auto speculative = args->speculative.to_options();
    auto session = Session::open(
        resolve_model_argument(args->model),
        {args->context_size, parse_kernel_mode(args->kernels),
         args->speculative.draft_directory_for(speculative), args->chat_template_file});
    // A bad KV scheme is refused before the first message.
    validate_kv_cache_scheme(args->kv_cache.to_scheme(), session->model());
    install_interrupt_handler();
    Chat(*args, std::move(session)).run();
  });
}

}  // namespace mlx_cpp::cli
