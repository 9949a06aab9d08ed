#pragma once
// Blocks the stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE) in the
// calling thread for the object's lifetime. Threads started meanwhile inherit
// the block and keep it: the CUDA driver starts threads of its own when it is
// first asked anything, and a stop signal must reach the threads that wait
// for it (the server's), never a driver thread, where its default action
// would kill the process.
#include <pthread.h>

#include <csignal>

namespace mlx_cpp {

class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t stops;
    sigemptyset(&stops);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&stops, signal);
    pthread_sigmask(SIG_BLOCK, &stops, &previous_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace mlx_cpp
