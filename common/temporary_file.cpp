#include "common/temporary_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace meshplan {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMark = ".meshplan-tmp.";

/// The table the signal handler reads: paths of the open temporaries. A slot is filled before
/// `used` is set and `used` cleared before it is reused, so the handler only reads whole paths.
constexpr std::size_t kSlots = 64;
constexpr std::size_t kPathBytes = 4096;  // PATH_MAX
struct Slot {
  std::array<char, kPathBytes> path{};
  volatile std::sig_atomic_t used = 0;
};
std::array<Slot, kSlots> g_slots;
std::mutex g_slots_mutex;  // between threads registering; the handler takes no lock

/// The signals that remove the temporaries, and the action each had before (called after).
constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
std::array<struct sigaction, kSignals.size()> g_previous{};

/// Unlinks every registered temporary (unlink is async-signal-safe), then does what the signal
/// did before: the default action (restored, then the signal raised again, so the process ends
/// by it as it would have), or the program's own handler.
extern "C" void remove_temporaries_on_signal(int signal, siginfo_t* info, void* context) {
  for (Slot& s : g_slots) {
    if (s.used) ::unlink(s.path.data());
  }
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    if (kSignals[i] != signal) continue;
    const struct sigaction& previous = g_previous[i];
    if (previous.sa_flags & SA_SIGINFO) {
      previous.sa_sigaction(signal, info, context);
    } else if (previous.sa_handler == SIG_DFL) {
      ::sigaction(signal, &previous, nullptr);
      ::raise(signal);
    } else if (previous.sa_handler != SIG_IGN) {
      previous.sa_handler(signal);
    }
  }
}

/// Puts remove_temporaries_on_signal in front of the current action of each signal, unless it
/// is there already or the signal is ignored. Called at each registration: a program (or a
/// test framework) that set its own handler since then is chained to as well.
void install_signal_handlers() {
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool ours =
        (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == remove_temporaries_on_signal;
    if (ours || (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN)) continue;
    g_previous[i] = current;
    struct sigaction action {};
    action.sa_sigaction = remove_temporaries_on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    ::sigaction(kSignals[i], &action, nullptr);
  }
}

/// A free slot filled with `path`, or -1 (table full or path too long: then only the
/// destructor removes the file).
int register_path(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  install_signal_handlers();
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (g_slots[i].used) continue;
    std::memcpy(g_slots[i].path.data(), path.c_str(), path.size() + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_slots[i].used = 1;
    return static_cast<int>(i);
  }
  return -1;
}

void unregister_slot(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_slots[static_cast<std::size_t>(slot)].used = 0;
}

/// 16 hex digits from the kernel's random source (getrandom; the clock and a counter only
/// where it fails, which O_EXCL still makes safe, if guessable).
std::string random_hex() {
  std::uint64_t value = 0;
  if (::getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    static std::atomic<std::uint64_t> counter{0};
    value =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (++counter * 0x9e3779b97f4a7c15ULL);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

std::string temporary_prefix(const std::string& final_path) {
  const fs::path p(final_path);
  const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  return (folder / ("." + p.filename().string() + kMark)).string();
}

void remove_stale_temporaries(const std::string& final_path) {
  const std::string prefix = temporary_prefix(final_path);
  const fs::path folder = fs::path(prefix).parent_path();
  const std::string start = fs::path(prefix).filename().string();
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(start, 0) != 0) continue;
    // "<pid>.<random>" after the prefix; a name of another shape is not ours.
    const std::string rest = name.substr(start.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot) {
      continue;
    }
    const long pid = std::strtol(rest.substr(0, dot).c_str(), nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    ::unlinkat(::dirfd(dir), name.c_str(), 0);
  }
  ::closedir(dir);
}

TemporaryFile::TemporaryFile(const std::string& final_path) {
  remove_stale_temporaries(final_path);
  const std::string prefix = temporary_prefix(final_path) + std::to_string(::getpid()) + ".";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate = prefix + random_hex();
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      path_ = candidate;
      slot_ = register_path(path_);
      return;
    }
    if (errno != EEXIST) break;  // a planted name is skipped; any other failure is final
  }
  error_ = "cannot create the temporary file " + temporary_prefix(final_path) +
           "* beside it: " + std::strerror(errno);
}

TemporaryFile::TemporaryFile(TemporaryFile&& other) noexcept
    : path_(std::move(other.path_)),
      error_(std::move(other.error_)),
      fd_(other.fd_),
      slot_(other.slot_) {
  other.path_.clear();
  other.fd_ = -1;
  other.slot_ = -1;
}

TemporaryFile::~TemporaryFile() {
  close();
  if (!path_.empty()) ::unlink(path_.c_str());
  unregister_slot(slot_);
}

std::string TemporaryFile::write_and_close(const std::string& content) {
  const char* data = content.data();
  std::size_t left = content.size();
  std::string failure;
  while (left > 0 && failure.empty()) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure = n < 0 ? std::strerror(errno) : "the write made no progress";
    } else {
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (failure.empty() && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    failure = std::strerror(errno);
  }
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0 && failure.empty()) failure = std::strerror(errno);
  return failure;
}

void TemporaryFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void TemporaryFile::release() {
  close();
  path_.clear();
  unregister_slot(slot_);
  slot_ = -1;
}

}  // namespace meshplan
