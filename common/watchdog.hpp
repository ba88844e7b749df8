// No hangs: a rank that dies, freezes or hangs makes the others stop within a timeout, with a
// message naming it (calibrate/README.md, "Faults").
//
// Four layers:
// 1. MPI errors are returned, not fatal inside MPI (MPI_ERRORS_RETURN on the world and on every
//    communicator split from it); a failed call throws MpiError and main.cpp prints
//    "rank R (host): error: <call>: <error>" and calls MPI_Abort, which ends every rank.
// 2. A rank that exits (crash, kill) is reported by the launcher, which ends the job (mpirun:
//    "process rank R ... exited on signal N").
// 3. Heartbeats (when MPI provides MPI_THREAD_MULTIPLE): a watchdog thread on every rank sends
//    rank 0 a 4-byte heartbeat every min(1 s, timeout / 4) on a private duplicate of the world,
//    and rank 0's thread sends rank 1 one; rank 0's thread receives the others' and rank 1's
//    thread rank 0's and, when a rank has been silent for timeout_s (its process frozen, its
//    node gone, though the launcher has not noticed), prints "rank 0 (host): rank R (host) has
//    sent no heartbeat for T s" (or "rank 1 (host): rank 0 (host) ...": a frozen rank 0 is
//    named too) and calls MPI_Abort. Checkpoints
//    do the same between steps without threads: every step starts with step(label), each rank
//    tells rank 0, and rank 0 names the ranks that do not arrive within timeout_s.
// 4. A step timer on every rank: when the current step has run longer than timeout_s (every
//    rank blocked in a collective because one rank's main thread hangs while its heartbeat
//    thread lives), the thread prints "rank R (host): step '<label>' has run for T s" and aborts
//    the job (MPI_Abort from the thread with MPI_THREAD_MULTIPLE, else _Exit(3), after which
//    the launcher ends the other ranks).
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace meshplan {

class Watchdog {
 public:
  /// Collective over `world` (duplicates it twice). `program` starts each message
  /// ("meshplan-calibrate"); `timeout_flag` is the program's flag that set timeout_s, named in
  /// each message ("--watchdog-s", meshplan-run's "--timeout-s"). `hosts`: per world rank, for
  /// messages. timeout_s > 0. `thread_may_call_mpi`: MPI_Init_thread provided
  /// MPI_THREAD_MULTIPLE (heartbeats run, the thread may call MPI_Abort).
  Watchdog(MPI_Comm world, std::string program, std::string timeout_flag,
           std::vector<std::string> hosts, double timeout_s, bool thread_may_call_mpi);
  /// Collective when no exception is propagating (stops the thread, drains heartbeats).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Starts step `label` on this rank: arms the step timer, then the checkpoint (rank 0 waits
  /// for every rank to reach it). Call on every rank with the same sequence of steps.
  void step(const std::string& label);

  /// Disarms the step timer (no step running: writing files, finishing).
  void idle();

 private:
  void watch();
  void heartbeat(std::chrono::steady_clock::time_point now);
  [[noreturn]] void abort_job(const std::string& message, bool from_thread);

  MPI_Comm checkpoints_ = MPI_COMM_NULL;  ///< main thread only
  MPI_Comm beats_ = MPI_COMM_NULL;        ///< watchdog thread only
  int rank_ = 0;
  int size_ = 1;
  std::string program_;
  std::string timeout_flag_;
  std::vector<std::string> hosts_;
  double timeout_s_;
  bool thread_may_call_mpi_;
  int sequence_ = 0;
  std::vector<std::string> reached_;  ///< rank 0: last step each rank reached
  std::vector<std::chrono::steady_clock::time_point> last_beat_;  ///< rank 0's and rank 1's thread
  std::chrono::steady_clock::time_point next_beat_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool armed_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;
};

}  // namespace meshplan
