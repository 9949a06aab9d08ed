#pragma once
// Drives a Scheduler over a scripted set of requests (each submitted at a
// given step) and keeps, per request, its tokens, every delivered token's
// log-probabilities and its result, for tests that compare a batched run
// with the same requests run alone.
#include <mlx/array.h>

#include <functional>
#include <memory>
#include <vector>

#include "engine/scheduler.h"

namespace mlx_cpp::testing {

// A runtime over the ids of a model golden's tiny checkpoint (no tokenizer).
std::unique_ptr<ModelRuntime> tiny_runtime(const std::string& golden_case, KernelMode kernels);

struct ScriptedRequest {
  TextRequest request;
  int submit_at_step = 0;  // joins the run at this step
};

struct RequestTrace {
  std::vector<mlx::core::array> logprobs;  // one per delivered token
  std::vector<int> delivery_steps;         // the step that delivered each token
  TextResult result;
  bool finished = false;
};

// Runs until every request has finished; throws if one fails.
// `after_step` (optional) sees the scheduler after each of its steps.
std::vector<RequestTrace> run_scripted(
    const ModelRuntime& runtime, const SchedulerOptions& options,
    const std::vector<ScriptedRequest>& requests, Scheduler* scheduler = nullptr,
    const std::function<void(const Scheduler&)>& after_step = {});

// Each request alone on a scheduler of one row (same chunking).
std::vector<RequestTrace> run_alone(const ModelRuntime& runtime, const SchedulerOptions& options,
                                    const std::vector<ScriptedRequest>& requests);

// "" when both traces have the same tokens and bit-identical logprobs.
std::string compare_traces(const RequestTrace& actual, const RequestTrace& expected);

}  // namespace mlx_cpp::testing
