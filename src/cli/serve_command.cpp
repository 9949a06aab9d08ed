// mlx-cpp serve: the OpenAI-compatible HTTP server (docs/server.md).
// Threads: main waits for a signal or a failed load; one thread listens
// (httplib's pool serves connections); the engine thread owns the model.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "chat/tool_call_format.h"
#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/compute_device.h"
#include "engine/model_runtime.h"
#include "engine/scheduler.h"
#include "io/error.h"
#include "io/model_cache.h"
#include "server/backend.h"
#include "server/embedding_backend.h"
#include "server/engine_thread.h"
#include "server/http_server.h"

namespace mlx_cpp::cli {
namespace {

struct ServeArguments {
  std::string model = kDefaultModel;
  server::ServerConfig config;
  int context_size = 0;
  std::string kernels = "fast";
  double shutdown_grace_seconds = 10;
  double header_timeout_seconds = 10;
  double body_timeout_seconds = 60;
  SchedulerOptions scheduling;
  std::string prompt_cache_bytes = "auto";
  std::string memory_budget = "auto";
  std::string ssd_cache_bytes = "17179869184";  // 16 GiB
  SpeculativeArguments speculative;
  KvCacheArguments kv_cache;
  std::string tool_call_format = "auto";
  std::string reasoning_format = "auto";
  std::string chat_template_file;
  std::vector<std::string> adapters;  // NAME=DIR
};

// serve --adapter NAME=DIR, each mounted when the model loads.
server::SchedulerBackend::AdapterMounts adapter_mounts(const std::vector<std::string>& values) {
  server::SchedulerBackend::AdapterMounts mounts;
  for (const auto& value : values) {
    const auto equals = value.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == value.size())
      throw Error("--adapter " + value + ": expected NAME=DIR");
    mounts.emplace_back(value.substr(0, equals), value.substr(equals + 1));
  }
  return mounts;
}

// A byte count, or `automatic` for "auto".
std::size_t parse_bytes(const std::string& option, const std::string& value,
                        std::size_t automatic) {
  if (value == "auto") return automatic;
  try {
    std::size_t used = 0;
    const unsigned long long bytes = std::stoull(value, &used);
    if (used == value.size() && value.find('-') == std::string::npos)
      return static_cast<std::size_t>(bytes);
  } catch (const std::exception&) {
  }
  throw Error(option + ": expected a byte count or 'auto', got '" + value + "'");
}

// --memory-budget auto: the device's memory (physical memory on the CPU,
// MLX's limit on the GPU) less a margin for the system and the server's own
// buffers (a tenth, at least 1 GiB).
std::size_t automatic_memory_budget() {
  const std::size_t total = usable_memory_bytes();
  const std::size_t margin = std::max<std::size_t>(total / 10, std::size_t(1) << 30);
  return total > margin ? total - margin : 0;
}

// The id /v1/models lists: the cache name, or the directory's name.
std::string served_model_id(const std::string& argument, const std::filesystem::path& directory) {
  if (!std::filesystem::is_directory(argument)) return argument;
  auto name = std::filesystem::weakly_canonical(directory).filename().string();
  return name.empty() ? argument : name;
}

// Waits for SIGINT/SIGTERM (blocked in every thread, taken with sigwait)
// or for the model to fail loading, whichever comes first.
class StopSignal {
 public:
  StopSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);  // before any thread starts
    ::signal(SIGPIPE, SIG_IGN);
  }
  void start() {
    waiter_ = std::thread([this] {
      int received = 0;
      sigwait(&signals_, &received);
      notify();
    });
  }
  void notify() {
    std::lock_guard lock(mutex_);
    stop_ = true;
    changed_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return stop_; });
  }
  ~StopSignal() {
    if (!waiter_.joinable()) return;
    pthread_kill(waiter_.native_handle(), SIGTERM);  // wakes sigwait if no signal came
    waiter_.join();
  }

 private:
  sigset_t signals_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::thread waiter_;
};

void run_serve(const ServeArguments& args) {
  const auto directory = resolve_model_path(args.model);
  const auto model_id = served_model_id(args.model, directory);
  StopSignal stop_signal;
  RuntimeOptions options{args.context_size, parse_kernel_mode(args.kernels)};
  if (args.tool_call_format != "auto") options.tool_call_format = args.tool_call_format;
  options.chat_template_file = args.chat_template_file;
  auto scheduling = args.scheduling;
  // A quarter of the memory free at start-up (of the GPU's, on the GPU), as
  // the prefix cache's default.
  scheduling.prompt_cache_bytes =
      parse_bytes("--prompt-cache-bytes", args.prompt_cache_bytes, free_memory_bytes() / 4);
  scheduling.memory_budget =
      parse_bytes("--memory-budget", args.memory_budget, automatic_memory_budget());
  scheduling.keep_draft_calibration = true;
  scheduling.ssd_cache_bytes = parse_bytes("--ssd-cache-bytes", args.ssd_cache_bytes, 0);
  const server::SchedulerBackend::RequestDefaults defaults{args.speculative.to_options(),
                                                           args.kv_cache.to_scheme()};
  const auto draft_directory = args.speculative.draft_directory();
  const auto mounts = adapter_mounts(args.adapters);
  server::EngineThread engine(
      [directory, options, scheduling, defaults, draft_directory,
       mounts]() -> std::unique_ptr<server::Backend> {
        if (EmbeddingRuntime::holds_embedding_model(directory))
          return std::make_unique<server::EmbeddingBackend>(
              EmbeddingRuntime::open(directory, options.kernels));
        auto runtime = ModelRuntime::open(directory, options);
        auto draft = draft_directory ? ModelRuntime::open(*draft_directory, options) : nullptr;
        return std::make_unique<server::SchedulerBackend>(std::move(runtime), scheduling,
                                                          std::move(draft), defaults, mounts);
      },
      model_id, args.config.max_queue);
  auto milliseconds = [](double seconds) {
    return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  };
  server::ServerConfig config = args.config;
  config.header_timeout = milliseconds(args.header_timeout_seconds);
  config.body_timeout = milliseconds(args.body_timeout_seconds);
  server::HttpServer http(config, engine);
  const int port = http.bind();
  std::clog << "mlx-cpp serve: listening on http://" << args.config.host << ':' << port
            << " (model '" << model_id << "' loading from " << directory.string() << ")"
            << std::endl;
  if (args.config.web_page)
    std::clog << "mlx-cpp serve: chat page at http://" << args.config.host << ':' << port << '/'
              << std::endl;
  const auto load_start = std::chrono::steady_clock::now();
  engine.start();
  stop_signal.start();
  std::thread listener([&http] { http.listen(); });
  std::thread load_watch([&] {
    if (engine.wait_until_loaded() == server::EngineState::ready) {
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - load_start;
      std::clog << "mlx-cpp serve: model ready in " << took.count() << " s" << std::endl;
      const auto format = engine.model_info()->output_format;
      std::clog << "mlx-cpp serve: tool calls parsed as "
                << (format.tool_calls ? std::string(format.tool_calls->name()) : "none")
                << (format.tool_calls && !format.tool_calls_from_template
                        ? " (the chat template writes none)"
                        : "")
                << "; reasoning "
                << (format.reasoning.empty() || !args.config.parse_reasoning
                        ? std::string("not parsed")
                        : "between " + format.reasoning.start + " and " + format.reasoning.end)
                << std::endl;
    } else {
      stop_signal.notify();
    }
  });
  stop_signal.wait();
  std::clog << "mlx-cpp serve: stopping" << std::endl;
  // New requests get 503 from here on; running ones finish or are cancelled
  // within the grace period, and their answers are written before the
  // listener closes (closing it cuts chunked responses short).
  engine.shutdown(std::chrono::milliseconds(static_cast<long>(args.shutdown_grace_seconds * 1000)));
  http.finish_responses(std::chrono::seconds(5));
  http.stop();
  listener.join();
  load_watch.join();
  if (engine.state() == server::EngineState::failed)
    throw Error("serve: cannot load model '" + args.model + "': " + engine.load_error());
}

}  // namespace

void register_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArguments>();
  auto& config = args->config;
  auto* command = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("--host", config.host, "Address to listen on (loopback by default)")
      ->capture_default_str();
  command->add_option("--port", config.port, "Port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  command->add_option("--api-key", config.api_key,
                      "Require 'Authorization: Bearer KEY' on every route but /health");
  command
      ->add_option("--max-queue", config.max_queue,
                   "Requests waiting or running before new ones get 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  command
      ->add_option("--ctx-size", args->context_size,
                   "Context size in tokens (default: the model's maximum)")
      ->check(CLI::NonNegativeNumber);
  add_kernels_option(command, args->kernels);
  // The server-wide default; requests choose with "speculative".
  add_speculative_options(command, args->speculative);
  // The server-wide default; requests choose with "kv_bits" and the rest.
  add_kv_cache_options(command, args->kv_cache);
  command
      ->add_option("--max-batch", args->scheduling.max_batch,
                   "Sequences generating at once (1: one request after another)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  // One prompt prefilled at a time by default: prompts are prefilled row by
  // row anyway, so more at once only delays the first of them, and every
  // step then holds at most one chunk of prompt tokens.
  args->scheduling.prefill_batch = 1;
  command
      ->add_option("--prefill-batch", args->scheduling.prefill_batch,
                   "Prompts prefilled at once, a chunk each per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  command
      ->add_option("--prefill-chunk", args->scheduling.prefill_chunk,
                   "Prompt tokens per sequence per step (0: the kernels' default)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_flag_callback(
      "--no-shared-verify", [args] { args->scheduling.shared_verifies = false; },
      "Verify each speculating sequence's drafts in a forward of its own (to compare with "
      "the default: one forward for all of a step's verifies)");
  command
      ->add_option("--memory-budget", args->memory_budget,
                   "Bytes for weights and caches; requests are capped or refused to fit "
                   "(auto: physical memory less a tenth, at least 1 GiB)")
      ->capture_default_str();
  command
      ->add_option("--prompt-cache-bytes", args->prompt_cache_bytes,
                   "Prefix cache size in bytes, 0 for none (auto: a quarter of free memory)")
      ->capture_default_str();
  command->add_option("--ssd-cache", args->scheduling.ssd_cache_directory,
                      "Keep prompt-cache entries evicted from memory in this folder, and load "
                      "them instead of prefilling");
  command
      ->add_option("--ssd-cache-bytes", args->ssd_cache_bytes,
                   "Bytes of files the SSD cache may hold (least recently used go first)")
      ->capture_default_str();
  command->add_option("--adapter", args->adapters,
                      "Mount a LoRA/DoRA adapter directory as NAME=DIR (repeatable); requests "
                      "choose it with \"adapter\": \"NAME\" or model \"<model>:NAME\"");
  command->add_option("--adapter-dir", config.adapter_dir,
                      "Folder of adapter directories: GET /v1/adapters/available lists them, "
                      "POST /v1/adapters mounts them by name");
  command->add_option("--cors-origin", config.cors_origin,
                      "Allow browser requests from this origin ('*' for any)");
  command
      ->add_option("--max-body-bytes", config.max_body_bytes,
                   "Largest request body accepted (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  command
      ->add_option("--max-connections", config.max_connections,
                   "Connections open at once, idle ones included (503 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{900}));
  command
      ->add_option("--max-connections-per-client", config.max_connections_per_client,
                   "Connections open at once from one address (429 beyond; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{900}));
  command
      ->add_option("--header-timeout", args->header_timeout_seconds,
                   "Seconds a request's header may take to arrive, from the connection's opening "
                   "or its previous answer (idle connections close then)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  command
      ->add_option("--body-timeout", args->body_timeout_seconds,
                   "Seconds a request's body may take to arrive")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  command
      ->add_option("--shutdown-grace", args->shutdown_grace_seconds,
                   "Seconds running requests may finish after SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  auto tool_formats = chat::tool_call_format_names();
  tool_formats.insert(tool_formats.begin(), {"auto", "none"});
  command
      ->add_option("--tool-call-format", args->tool_call_format,
                   "How answers write tool calls: auto (what the chat template writes), none, "
                   "or a format")
      ->capture_default_str()
      ->check(CLI::IsMember(tool_formats));
  command
      ->add_option("--chat-template-file", args->chat_template_file,
                   "A Jinja chat template to use instead of the model's")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--reasoning-budget", config.reasoning_budget,
                   "Reasoning tokens a request may use before the engine closes its think "
                   "block (-1: no limit; a request's thinking_token_budget overrides it)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 30));
  command
      ->add_option("--reasoning-format", args->reasoning_format,
                   "auto: reasoning goes to reasoning_content; none: it stays in the content")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none"}))
      ->each([args](const std::string& value) { args->config.parse_reasoning = value != "none"; });
  command->add_flag(
      "--no-webui", [args](int64_t) { args->config.web_page = false; },
      "No chat page at / (the API alone)");
  command->add_flag(
      "--quiet", [args](int64_t) { args->config.log_requests = false; },
      "No per-request log lines");
  command->callback([args] { run_serve(*args); });
}

}  // namespace mlx_cpp::cli
