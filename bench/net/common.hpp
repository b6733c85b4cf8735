// Shared helpers for the network and pipe baselines in bench/net/.
//
// - Args: strict "--key value" command-line parsing (bad input -> usage on stderr, exit 2).
// - Json: builds the single machine-readable result line each program prints on stdout.
// - sys:: counted wrappers around every system call the measured loops make, so a
//   benchmark can report syscalls per operation (event-loop calls counted apart).
// - small utilities: monotonic clock, CPU pinning, process CPU time.
#pragma once

#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nb {

// ---------------------------------------------------------------------------------------------
// Command line

struct OptSpec {
  const char* name;   // without the leading "--"
  bool takes_value;   // false: a flag such as --fixed
};

class Args {
 public:
  // usage: full usage text printed on error (exit 2) and for --help (exit 0).
  Args(int argc, char** argv, std::string usage, std::initializer_list<OptSpec> specs)
      : usage_(std::move(usage)), specs_(specs) {
    prog_ = argc > 0 ? argv[0] : "prog";
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fputs(usage_.c_str(), stdout);
        std::exit(0);
      }
      if (a.size() < 3 || a.substr(0, 2) != "--") fail("unexpected argument '" + std::string(a) + "'");
      std::string key(a.substr(2));
      std::string val;
      bool has_inline = false;
      if (auto eq = key.find('='); eq != std::string::npos) {
        val = key.substr(eq + 1);
        key.resize(eq);
        has_inline = true;
      }
      const OptSpec* spec = find(key);
      if (!spec) fail("unknown option '--" + key + "'");
      if (spec->takes_value) {
        if (!has_inline) {
          if (i + 1 >= argc) fail("option '--" + key + "' needs a value");
          val = argv[++i];
        }
      } else {
        if (has_inline) fail("option '--" + key + "' takes no value");
        val = "1";
      }
      if (values_.count(key)) fail("option '--" + key + "' given twice");
      values_[key] = val;
    }
  }

  [[noreturn]] void fail(const std::string& msg) const {
    std::fprintf(stderr, "%s: %s\n\n%s", prog_.c_str(), msg.c_str(), usage_.c_str());
    std::exit(2);
  }

  bool has(const std::string& key) const { return values_.count(key) != 0; }

  int64_t get_int(const std::string& key, int64_t def, int64_t lo, int64_t hi) const {
    auto it = values_.find(key);
    if (it == values_.end()) return def;
    return parse_int(key, it->second, lo, hi);
  }

  int64_t need_int(const std::string& key, int64_t lo, int64_t hi) const {
    auto it = values_.find(key);
    if (it == values_.end()) fail("option '--" + key + "' is required");
    return parse_int(key, it->second, lo, hi);
  }

  double get_double(const std::string& key, double def, double lo, double hi) const {
    auto it = values_.find(key);
    if (it == values_.end()) return def;
    const std::string& s = it->second;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || errno != 0 || end != s.c_str() + s.size() || !(v >= lo && v <= hi))
      fail("option '--" + key + "': expected a number in [" + fmt_d(lo) + ", " + fmt_d(hi) + "], got '" + s + "'");
    return v;
  }

  double need_double(const std::string& key, double lo, double hi) const {
    if (!has(key)) fail("option '--" + key + "' is required");
    return get_double(key, 0, lo, hi);
  }

  std::string get_choice(const std::string& key, const std::string& def,
                         std::initializer_list<const char*> choices) const {
    auto it = values_.find(key);
    if (it == values_.end()) return def;
    for (const char* c : choices)
      if (it->second == c) return it->second;
    std::string all;
    for (const char* c : choices) all += std::string(all.empty() ? "" : "|") + c;
    fail("option '--" + key + "': expected one of " + all + ", got '" + it->second + "'");
  }

  std::string need_choice(const std::string& key, std::initializer_list<const char*> choices) const {
    if (!has(key)) fail("option '--" + key + "' is required");
    return get_choice(key, "", choices);
  }

 private:
  const OptSpec* find(const std::string& key) const {
    for (const auto& s : specs_)
      if (key == s.name) return &s;
    return nullptr;
  }
  static std::string fmt_d(double d) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", d);
    return b;
  }
  int64_t parse_int(const std::string& key, const std::string& s, int64_t lo, int64_t hi) const {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || errno != 0 || end != s.c_str() + s.size() || v < lo || v > hi)
      fail("option '--" + key + "': expected an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got '" + s + "'");
    return v;
  }

  std::string prog_;
  std::string usage_;
  std::vector<OptSpec> specs_;
  std::map<std::string, std::string> values_;
};

// ---------------------------------------------------------------------------------------------
// One-line JSON output

class Json {
 public:
  Json& add(const char* k, const std::string& v) {
    key(k);
    out_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char b[8];
        std::snprintf(b, sizeof b, "\\u%04x", c);
        out_ += b;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
    return *this;
  }
  Json& add(const char* k, const char* v) { return add(k, std::string(v)); }
  Json& add(const char* k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
    return *this;
  }
  Json& add(const char* k, int v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, unsigned v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, long v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, unsigned long v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, long long v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, unsigned long long v) { return put(k, std::to_string(v)); }
  Json& add(const char* k, double v, int decimals = 3) {
    key(k);
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", decimals, v);
    out_ += b;
    return *this;
  }
  // Prints the line on stdout and flushes.
  void print() const {
    std::string s = out_ + "}\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }

 private:
  Json& put(const char* k, const std::string& raw) {
    key(k);
    out_ += raw;
    return *this;
  }
  void key(const char* k) {
    out_ += first_ ? "" : ",";
    first_ = false;
    out_ += '"';
    out_ += k;
    out_ += "\":";
  }
  std::string out_ = "{";
  bool first_ = true;
};

// ---------------------------------------------------------------------------------------------
// Time, CPU

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// User + system CPU time of the whole process (all threads, io_uring io-wq / SQPOLL workers
// included, since they belong to the process), in ns.
inline uint64_t process_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_usec) * 1000ull;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// Pins the calling thread to one CPU. cpu < 0: no pinning. Returns false on failure.
inline bool pin_cpu(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "sched_setaffinity(cpu %d): %s\n", cpu, std::strerror(errno));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Counted system calls. Every call a measured loop makes goes through one of these, so the
// numbers are exact for this program's own thread (io_uring's kernel workers make none).

struct SysCounters {
  uint64_t loop = 0;  // event-loop calls: epoll_wait, io_uring_enter
  uint64_t io = 0;    // data movement: read, write, recv, send, splice
  uint64_t ctl = 0;   // everything else: accept, close, epoll_ctl, setsockopt, register, ...
  uint64_t total() const { return loop + io + ctl; }
  SysCounters operator-(const SysCounters& o) const { return {loop - o.loop, io - o.io, ctl - o.ctl}; }
};

inline SysCounters g_sys;

namespace sys {
inline ssize_t read(int fd, void* b, size_t n) { ++g_sys.io; return ::read(fd, b, n); }
inline ssize_t write(int fd, const void* b, size_t n) { ++g_sys.io; return ::write(fd, b, n); }
inline ssize_t recv(int fd, void* b, size_t n, int fl) { ++g_sys.io; return ::recv(fd, b, n, fl); }
inline ssize_t send(int fd, const void* b, size_t n, int fl) { ++g_sys.io; return ::send(fd, b, n, fl); }
inline int epoll_wait(int ep, epoll_event* ev, int n, int ms) { ++g_sys.loop; return ::epoll_wait(ep, ev, n, ms); }
inline int epoll_ctl(int ep, int op, int fd, epoll_event* ev) { ++g_sys.ctl; return ::epoll_ctl(ep, op, fd, ev); }
inline int accept4(int fd, sockaddr* a, socklen_t* l, int fl) { ++g_sys.ctl; return ::accept4(fd, a, l, fl); }
inline int close(int fd) { ++g_sys.ctl; return ::close(fd); }
inline int setsockopt(int fd, int lvl, int opt, const void* v, socklen_t l) {
  ++g_sys.ctl;
  return ::setsockopt(fd, lvl, opt, v, l);
}
}  // namespace sys

// ---------------------------------------------------------------------------------------------
// Small socket helpers (set-up only; not on measured paths).

inline bool set_nonblock(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return false;
  fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
  return fcntl(fd, F_SETFL, fl) == 0;
}

// TCP listener on 127.0.0.1:port with SO_REUSEADDR. Returns the fd, or -1 (message on stderr).
inline int listen_loopback(int port, bool nonblock, int backlog = 1024) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) {
    std::fprintf(stderr, "socket: %s\n", std::strerror(errno));
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::fprintf(stderr, "bind 127.0.0.1:%d: %s\n", port, std::strerror(errno));
    ::close(fd);
    return -1;
  }
  if (::listen(fd, backlog) != 0) {
    std::fprintf(stderr, "listen: %s\n", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sets TCP_NODELAY (counted: servers do this once per accepted connection).
inline bool set_nodelay(int fd) {
  int one = 1;
  return sys::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
}

// Fills 'n' bytes with a deterministic pattern derived from 'seed'.
inline void fill_pattern(unsigned char* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<unsigned char>(x >> 24);
  }
}

}  // namespace nb

#include <signal.h>
#include <sys/signalfd.h>

namespace nb {

// Blocks SIGTERM and SIGINT and returns a signalfd that becomes readable when one arrives
// (servers watch it in their event loop and then exit cleanly). Also ignores SIGPIPE.
inline int termination_signalfd() {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return -1;
  return ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

}  // namespace nb

namespace nb {

// Raises the soft open-file limit to the hard limit (500 ping-pong pairs need > 1024 fds).
inline void raise_nofile() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace nb

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace nb {

// Bounds a run's wall time from a helper thread, so the measured event loop carries no timer
// at all: every program of the suite (raw liburing, epoll, ringo) waits the same way, without
// a timeout on its waits. At the deadline the watchdog runs a "give up" action, which must make
// the loop's pending waits complete (shutdown(2) of the sockets, a byte into every pipe) so the
// loop sees fired() and stops; if the program still has not finished after a grace period it
// runs a last action that prints a failed JSON line and _exit()s.
class Watchdog {
public:
    Watchdog() = default;
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    ~Watchdog() { stop(); }

    // After `seconds`, unless stop() came first: sets fired(), runs give_up() (on the watchdog
    // thread), waits `grace` more seconds and, if stop() still has not come, runs last_resort()
    // (expected not to return: print a failed JSON line and _exit).
    void start(double seconds, std::function<void()> give_up, std::function<void()> last_resort,
               double grace = 3.0) {
        give_up_ = std::move(give_up);
        last_resort_ = std::move(last_resort);
        th_ = std::thread([this, seconds, grace] {
            std::unique_lock lk(m_);
            auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
            if (cv_.wait_until(lk, until, [this] { return stopping_; }))
                return;
            fired_.store(true, std::memory_order_release);
            lk.unlock();
            if (give_up_)
                give_up_();
            lk.lock();
            until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
            if (cv_.wait_until(lk, until, [this] { return stopping_; }))
                return;
            if (last_resort_)
                last_resort_();
        });
    }

    // Ends the watchdog (joins its thread). Idempotent.
    void stop() {
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        if (th_.joinable())
            th_.join();
    }

    [[nodiscard]] bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }

private:
    std::thread th_;
    std::mutex m_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::atomic<bool> fired_{false};
    std::function<void()> give_up_;
    std::function<void()> last_resort_;
};

}  // namespace nb
