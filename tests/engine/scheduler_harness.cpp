#include "scheduler_harness.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <stdexcept>

#include "../model/golden_case.h"

namespace mlx_cpp::testing {
namespace mx = mlx::core;

std::unique_ptr<ModelRuntime> tiny_runtime(const std::string& golden_case, KernelMode kernels) {
  auto golden = GoldenCase::load(golden_case);
  return ModelRuntime::for_token_ids(load_model(golden.model_directory, {kernels}), {0, kernels});
}

std::vector<RequestTrace> run_scripted(const ModelRuntime& runtime, const SchedulerOptions& options,
                                       const std::vector<ScriptedRequest>& requests,
                                       Scheduler* shared,
                                       const std::function<void(const Scheduler&)>& after_step) {
  std::unique_ptr<Scheduler> own;
  if (!shared) own = std::make_unique<Scheduler>(runtime, options);
  Scheduler& scheduler = shared ? *shared : *own;
  std::vector<RequestTrace> traces(requests.size());
  std::exception_ptr failure;
  std::size_t submitted = 0, finished = 0;
  for (int step = 0; finished < requests.size(); ++step) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].submit_at_step != step) continue;
      auto& trace = traces[i];
      SequenceSink sink;
      sink.on_chunk = [](const TextChunk&) { return true; };
      sink.on_finish = [&trace, &finished](TextResult result) {
        trace.result = std::move(result);
        trace.finished = true;
        ++finished;
      };
      sink.on_error = [&failure, &finished](std::exception_ptr error) {
        failure = error;
        ++finished;
      };
      sink.observe_logprobs = [&trace, &step](const mx::array& logprobs) {
        auto copy = mx::astype(logprobs, mx::float32);
        mx::eval(copy);
        trace.logprobs.push_back(copy);
        trace.delivery_steps.push_back(step);
      };
      scheduler.submit(requests[i].request, std::move(sink));
      ++submitted;
    }
    if (scheduler.has_work()) scheduler.step();
    if (failure) std::rethrow_exception(failure);
    if (after_step) after_step(scheduler);
    if (step > 100000) throw std::runtime_error("run_scripted: the scheduler never finished");
  }
  return traces;
}

std::vector<RequestTrace> run_alone(const ModelRuntime& runtime, const SchedulerOptions& options,
                                    const std::vector<ScriptedRequest>& requests) {
  auto single = options;
  single.max_batch = 1;
  single.prefill_batch = 1;
  std::vector<RequestTrace> traces;
  for (const auto& request : requests) {
    auto alone = request;
    alone.submit_at_step = 0;
    traces.push_back(run_scripted(runtime, single, {alone}).front());
  }
  return traces;
}

std::string compare_traces(const RequestTrace& actual, const RequestTrace& expected) {
  if (actual.result.completion_ids != expected.result.completion_ids) return "tokens differ";
  if (actual.result.finish_reason != expected.result.finish_reason)
    return "finish reasons differ: " + actual.result.finish_reason + " vs " +
           expected.result.finish_reason;
  if (actual.logprobs.size() != expected.logprobs.size()) return "logprob rows differ in count";
  for (std::size_t i = 0; i < actual.logprobs.size(); ++i) {
    auto difference = compare_exact(actual.logprobs[i], expected.logprobs[i]);
    if (!difference.empty()) return "token " + std::to_string(i) + ": " + difference;
  }
  return "";
}

}  // namespace mlx_cpp::testing
