#include "engine/session.h"

#include <limits>

namespace mlx_cpp {

std::unique_ptr<Session> Session::open(const std::filesystem::path& directory,
                                       const SessionOptions& options) {
  std::unique_ptr<Session> session(new Session());
  RuntimeOptions runtime_options{options.context_size, options.kernels};
  runtime_options.chat_template_file = options.chat_template_file;
  session->runtime_ = ModelRuntime::open(directory, runtime_options);
  SchedulerOptions scheduling;
  scheduling.max_batch = 1;
  scheduling.prefill_batch = 1;
  // One conversation: its newest state, and for sliding-window caches the
  // snapshot at the newest prompt's boundary.
  scheduling.prompt_cache_bytes = std::numeric_limits<std::size_t>::max();
  scheduling.prompt_cache_entries = 2;
  scheduling.keep_draft_calibration = true;
  if (options.draft_model)
    session->draft_ =
        ModelRuntime::open(*options.draft_model, {options.context_size, options.kernels});
  session->scheduler_ =
      std::make_unique<Scheduler>(*session->runtime_, scheduling, session->draft_.get());
  return session;
}

TextResult Session::generate(const TextRequest& request,
                             const std::function<bool(const TextChunk&)>& on_chunk) {
  TextResult result;
  std::exception_ptr error;
  bool done = false;
  SequenceSink sink{on_chunk,
                    [&](TextResult finished) {
                      result = std::move(finished);
                      done = true;
                    },
                    [&](std::exception_ptr failure) {
                      error = failure;
                      done = true;
                    }};
  scheduler_->submit(request, std::move(sink));
  while (!done) scheduler_->step();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace mlx_cpp
