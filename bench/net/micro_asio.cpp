// bench_asio_micro: the runtime micro benchmarks of the suite ("micro" figure) written with Asio
// (standalone, Debian libasio-dev 1.22) and C++20 coroutines, on one io_context run by one thread.
// Same subcommands, options and JSON line as the Rust baselines (bench/rust/README.md):
//
//   spawn   --count N [--batch B] [--rounds R] [--in task]   co_spawn N empty asio::awaitable<void> coroutines and
//                                               wait for all (joined every B spawns; default all at once)
//   yield   --count N [--in task]               one coroutine yields N times:
//                                               co_await asio::post(executor, asio::use_awaitable)
//   channel --messages M --pairs P [--capacity 1024] [--in task]
//                                               P producer/consumer coroutine pairs, each over its own
//                                               asio::experimental::channel<void(error_code, uint64_t)>
//                                               with that buffer size; producers send 0..M, consumers
//                                               count and sum, both checked
//   xchannel --messages M [--capacity 1024] [--in task]
//                                               cross-thread channel: two io_contexts, each run by its
//                                               own thread (pinned to the first two CPUs the process may
//                                               use); a producer coroutine on one sends 0..M through one
//                                               asio::experimental::concurrent_channel of that buffer
//                                               size to a consumer coroutine on the other
//
// The body of each benchmark runs in a co_spawn'ed coroutine ("in":"task"); Asio has no root future
// polled outside its scheduler, so "--in root" is refused. The measured interval (seconds,
// cpu_seconds) is taken inside that coroutine, after the io_context exists and before the first
// spawn/yield/channel is created, up to the last join. xchannel measures from the main thread: from
// just before it releases the two threads (their io_contexts and coroutines already set up) until
// both have finished; cpu_seconds is the whole process's (both threads).
//
// Channel end of stream: in Asio 1.22 channel::close() drops the messages still in the buffer, so a
// producer ends its stream by sending one more message carrying asio::error::eof (the signature's
// error_code); the consumer stops on it. That marker is not counted as a message.
//
// Exit status: 0 ok, 1 failed run (the line has ok:false and "error"), 2 usage error (the line has
// ok:false and "error":"usage: ..."; the usage text goes to stderr). --help prints the usage on stdout.
#include <asio.hpp>
#include <asio/experimental/channel.hpp>

#include <asio/experimental/concurrent_channel.hpp>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <barrier>
#include <thread>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

constexpr const char* kImpl = "asio";
constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// The programs create no I/O objects, so the io_context never starts its reactor (epoll on Linux):
// the measured loops make no system calls (checked with strace -c).
constexpr const char* kDriver = "asio io_context (1 thread, concurrency hint 1; no I/O objects, reactor not started)";

const char* kUsage =
    "usage: bench_asio_micro <subcommand> [--option value]...\n"
    "\n"
    "subcommands:\n"
    "  spawn       --count N [--batch B] [--rounds R] [--in task]   (B: join every B spawns; default all at\n"
    "              once; R: the workload R times on one io_context, the last one timed)\n"
    "  yield       --count N [--in task]\n"
    "  channel     --messages M --pairs P [--capacity 1024] [--in task]\n"
    "  xchannel    --messages M [--capacity 1024] [--in task]   (producer and consumer io_contexts on two threads/CPUs)\n"
    "  --in: the body always runs in a co_spawn'ed coroutine (task); Asio has no root future\n"
    "\n"
    "runtime: Asio " /* version appended at run time */;

std::string usage_text() {
  char v[64];
  std::snprintf(v, sizeof v, "%d.%d.%d", ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100);
  return std::string(kUsage) + v +
         ", C++20 coroutines (asio::awaitable, co_spawn), one io_context run by one thread\n"
         "yield: co_await asio::post(executor, asio::use_awaitable)\n"
         "channel: asio::experimental::channel<void(asio::error_code, std::uint64_t)>\n"
         "xchannel: asio::experimental::concurrent_channel<void(asio::error_code, std::uint64_t)>\n"
         "Each run prints one JSON line on stdout. Exit 0 ok, 1 failed run, 2 usage error.\n";
}

// ------------------------------------------------------------------------------------------------
// The JSON line (field order as in the Rust baselines).

class Report {
 public:
  Report(const std::string& bench, const char* variant) {
    str("bench", bench).str("impl", kImpl).str("variant", variant);
  }
  Report& str(const char* k, std::string_view v) {
    key(k);
    out_ += '"';
    for (char c : v) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out_ += b;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
    return *this;
  }
  Report& uint(const char* k, std::uint64_t v) {
    key(k);
    out_ += std::to_string(v);
    return *this;
  }
  Report& num(const char* k, double v, int decimals) {
    key(k);
    if (std::isfinite(v)) {
      char b[64];
      std::snprintf(b, sizeof b, "%.*f", decimals, v);
      out_ += b;
    } else {
      out_ += "null";
    }
    return *this;
  }
  Report& boolean(const char* k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
    return *this;
  }
  void print() const {
    std::string s = out_ + "}\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }

 private:
  void key(const char* k) {
    out_ += first_ ? "\"" : ",\"";
    first_ = false;
    out_ += k;
    out_ += "\":";
  }
  std::string out_ = "{";
  bool first_ = true;
};

[[noreturn]] void fail(const std::string& bench, const char* variant, int code, const std::string& msg) {
  Report r(bench, variant);
  r.uint("errors", 0).boolean("ok", false).str("error", msg);
  r.print();
  std::exit(code);
}

[[noreturn]] void usage_exit(const std::string& bench, const std::string& msg) {
  std::fprintf(stderr, "error: %s\n\n%s", msg.c_str(), usage_text().c_str());
  fail(bench, "none", kExitUsage, "usage: " + msg);
}

// ------------------------------------------------------------------------------------------------
// Command line: <subcommand> followed by --key value / --key=value, each key at most once.

struct UsageError {
  std::string msg;
};

class Args {
 public:
  Args(int argc, char** argv) {
    if (argc < 2) throw UsageError{"missing subcommand"};
    cmd = argv[1];
    if (cmd.empty() || cmd[0] == '-') throw UsageError{"expected a subcommand, got '" + cmd + "'"};
    for (int i = 2; i < argc; ++i) {
      std::string a = argv[i];
      if (a.size() < 2 || a.compare(0, 2, "--") != 0) throw UsageError{"unexpected argument '" + a + "'"};
      std::string body = a.substr(2), k, v;
      if (auto eq = body.find('='); eq != std::string::npos) {
        k = body.substr(0, eq);
        v = body.substr(eq + 1);
      } else {
        if (i + 1 >= argc) throw UsageError{"option --" + body + " needs a value"};
        k = body;
        v = argv[++i];
      }
      if (k.empty()) throw UsageError{"bad option '" + a + "'"};
      for (const auto& [x, y] : opts_)
        if (x == k) throw UsageError{"option --" + k + " given twice"};
      opts_.emplace_back(std::move(k), std::move(v));
    }
  }

  void only(std::initializer_list<const char*> allowed) const {
    for (const auto& [k, v] : opts_) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) throw UsageError{"unknown option --" + k + " for '" + cmd + "'"};
    }
  }

  // An unsigned decimal integer in [lo, hi]; def when absent (required when def is empty).
  std::uint64_t uint(const char* key, std::optional<std::uint64_t> def, std::uint64_t lo, std::uint64_t hi) const {
    const std::string* s = raw(key);
    std::uint64_t v;
    if (s) {
      bool digits = !s->empty() && s->size() <= 20;
      for (char c : *s) digits = digits && c >= '0' && c <= '9';
      errno = 0;
      char* end = nullptr;
      unsigned long long x = digits ? std::strtoull(s->c_str(), &end, 10) : 0;
      if (!digits || errno != 0 || end != s->c_str() + s->size())
        throw UsageError{"--" + std::string(key) + ": '" + *s + "' is not an unsigned integer"};
      v = x;
    } else if (def) {
      v = *def;
    } else {
      throw UsageError{"missing --" + std::string(key)};
    }
    if (v < lo || v > hi)
      throw UsageError{"--" + std::string(key) + " must be in " + std::to_string(lo) + "..=" + std::to_string(hi) +
                       ", got " + std::to_string(v)};
    return v;
  }

  // "--in": only "task" is meaningful for Asio (see the header comment).
  void place() const {
    const std::string* s = raw("in");
    if (!s || *s == "task") return;
    if (*s == "root")
      throw UsageError{"--in root is not supported by asio: every coroutine is started with co_spawn (use task)"};
    throw UsageError{"--in must be 'task' or 'root', got '" + *s + "'"};
  }

  std::string cmd;

 private:
  const std::string* raw(const char* key) const {
    for (const auto& [k, v] : opts_)
      if (k == key) return &v;
    return nullptr;
  }
  std::vector<std::pair<std::string, std::string>> opts_;
};

// ------------------------------------------------------------------------------------------------
// Measurement

double cpu_seconds() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
  return static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) * 1e-6 +
         static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) * 1e-6;
}

// Minor page faults of the process so far (memory touched for the first time).
long minor_faults() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return ru.ru_minflt;
}

struct Measured {
  double seconds = 0, cpu_seconds = 0;
  long minflt = 0;
};

class Meter {
 public:
  Meter() : cpu0_(cpu_seconds()), flt0_(minor_faults()), t0_(std::chrono::steady_clock::now()) {}
  Measured stop() const {
    Measured m;
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    m.cpu_seconds = cpu_seconds() - cpu0_;
    m.minflt = minor_faults() - flt0_;
    return m;
  }

 private:
  double cpu0_;
  long flt0_;
  std::chrono::steady_clock::time_point t0_;
};

// What a benchmark body reports back to main.
struct Outcome {
  bool finished = false;  // the body ran to its end
  Measured m;
  std::uint64_t ops = 0, errors = 0;
  std::string error;  // first error
  void note(std::string e) {
    ++errors;
    if (error.empty()) error = std::move(e);
  }
};

std::string what(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Runs body() as a co_spawn'ed coroutine on a fresh single-threaded io_context until it and
// everything it started are done. Exceptions escaping the body or the scheduler become errors.
template <typename Body>
void run_task(Outcome& out, Body body) {
  asio::io_context ctx(1);
  asio::co_spawn(ctx, body(), [&out](std::exception_ptr e) {
    if (e) out.note("benchmark coroutine failed: " + what(e));
  });
  try {
    ctx.run();
  } catch (const std::exception& e) {
    out.note(std::string("io_context::run: ") + e.what());
  }
  if (!out.finished && out.error.empty()) out.note("the benchmark coroutine did not finish");
}

[[noreturn]] void finish_micro(Report& r, const Outcome& o, std::uint64_t expected) {
  bool ok = o.finished && o.errors == 0 && o.ops == expected && o.error.empty();
  std::string err = o.error;
  if (!ok && err.empty())
    err = "completed " + std::to_string(o.ops) + " of " + std::to_string(expected) + " operations";
  double ns = o.ops > 0 ? o.m.seconds * 1e9 / static_cast<double>(o.ops) : NAN;
  r.uint("ops", o.ops)
      .uint("bytes", 0)
      .num("seconds", o.m.seconds, 6)
      .num("cpu_seconds", o.m.cpu_seconds, 6)
      .uint("minflt", static_cast<std::uint64_t>(o.m.minflt > 0 ? o.m.minflt : 0))
      .num("ns_per_op", ns, 3)
      .uint("errors", o.errors)
      .boolean("ok", ok);
  if (!ok) r.str("error", err);
  r.print();
  std::exit(ok ? kExitOk : kExitFailed);
}

Report micro_report(const char* bench) {
  Report r(bench, "plain");
  r.str("driver", kDriver).str("in", "task");
  return r;
}

// A one-shot wake-up a coroutine can wait for: a channel with room for one signal, so a signal sent
// before the wait is kept. (The value is unused: Asio 1.22's channel does not compile with a
// signature that carries an error_code alone.)
using Signal = asio::experimental::channel<void(asio::error_code, std::uint64_t)>;

// ------------------------------------------------------------------------------------------------
// spawn

asio::awaitable<void> empty_task() { co_return; }

// `rounds` times the whole workload on one io_context, only the last timed (the rounds before
// it leave the memory the coroutines need already touched).
asio::awaitable<void> spawn_body(std::uint64_t count, std::uint64_t batch, std::uint64_t rounds, Outcome& out) {
  auto ex = co_await asio::this_coro::executor;
  Signal joined(ex, 1);
  std::uint64_t done = 0, finished = 0, target = 0;
  std::optional<Meter> meter;
  for (std::uint64_t r = 1; r <= rounds; ++r) {
    if (r == rounds) {
      done = 0;
      meter.emplace();
    }
    for (std::uint64_t left = count; left > 0;) {
      std::uint64_t k = left < batch ? left : batch;
      target += k;
      for (std::uint64_t i = 0; i < k; ++i) {
        // The completion handler is the join: it runs when the coroutine has finished.
        asio::co_spawn(ex, empty_task(), [&](std::exception_ptr e) {
          if (e)
            out.note("spawned coroutine failed: " + what(e));
          else
            ++done;
          if (++finished == target) joined.try_send(asio::error_code{}, std::uint64_t{0});
        });
      }
      co_await joined.async_receive(asio::use_awaitable);
      left -= k;
    }
  }
  out.m = meter->stop();
  out.ops = done;
  out.finished = true;
}

[[noreturn]] void spawn_bench(const Args& a) {
  a.only({"count", "batch", "rounds", "in"});
  std::uint64_t count = a.uint("count", std::nullopt, 1, std::uint64_t{1} << 32);
  std::uint64_t batch = a.uint("batch", 0, 0, std::uint64_t{1} << 32);
  std::uint64_t rounds = a.uint("rounds", 1, 1, std::uint64_t{1} << 16);
  batch = batch == 0 ? count : (batch < count ? batch : count);
  a.place();
  Outcome out;
  run_task(out, [&] { return spawn_body(count, batch, rounds, out); });
  Report r = micro_report("spawn");
  r.uint("count", count).uint("batch", batch).uint("rounds", rounds);
  finish_micro(r, out, count);
}

// ------------------------------------------------------------------------------------------------
// yield

asio::awaitable<void> yield_body(std::uint64_t count, Outcome& out) {
  auto ex = co_await asio::this_coro::executor;
  Meter meter;
  std::uint64_t done = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    co_await asio::post(ex, asio::use_awaitable);
    ++done;
  }
  out.m = meter.stop();
  out.ops = done;
  out.finished = true;
}

[[noreturn]] void yield_bench(const Args& a) {
  a.only({"count", "in"});
  std::uint64_t count = a.uint("count", std::nullopt, 1, std::uint64_t{1} << 40);
  a.place();
  Outcome out;
  run_task(out, [&] { return yield_body(count, out); });
  Report r = micro_report("yield");
  r.str("yield_fn", "co_await asio::post(executor, asio::use_awaitable)").uint("count", count);
  finish_micro(r, out, count);
}

// ------------------------------------------------------------------------------------------------
// channel

using U64Channel = asio::experimental::channel<void(asio::error_code, std::uint64_t)>;

// Sum of 0..m-1 modulo 2^64, what each consumer must see.
std::uint64_t expected_sum(std::uint64_t m) {
  unsigned __int128 s = static_cast<unsigned __int128>(m) * (m - 1) / 2;
  return static_cast<std::uint64_t>(s);
}

struct PairResult {
  bool producer_done = false, consumer_done = false;
  std::uint64_t received = 0, sum = 0;
};

// Sends 0..messages-1, then eof (end of stream). Ch: channel or concurrent_channel.
template <class Ch>
asio::awaitable<void> send_all(Ch& ch, std::uint64_t messages) {
  for (std::uint64_t i = 0; i < messages; ++i) co_await ch.async_send(asio::error_code{}, i, asio::use_awaitable);
  co_await ch.async_send(asio::error::eof, std::uint64_t{0}, asio::use_awaitable);
}

// Receives until eof; counts and sums what came.
template <class Ch>
asio::awaitable<void> receive_all(Ch& ch, std::uint64_t& received, std::uint64_t& sum) {
  std::uint64_t n = 0, s = 0;
  for (;;) {
    asio::error_code ec;
    std::uint64_t v = co_await ch.async_receive(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::eof) break;
    if (ec) throw asio::system_error(ec, "channel receive");
    ++n;
    s += v;
  }
  received = n;
  sum = s;
}

asio::awaitable<void> producer(U64Channel& ch, std::uint64_t messages, PairResult& res) {
  co_await send_all(ch, messages);
  res.producer_done = true;
}

asio::awaitable<void> consumer(U64Channel& ch, PairResult& res) {
  co_await receive_all(ch, res.received, res.sum);
  res.consumer_done = true;
}

asio::awaitable<void> channel_body(std::uint64_t messages, std::uint64_t pairs, std::uint64_t capacity,
                                   Outcome& out) {
  auto ex = co_await asio::this_coro::executor;
  Signal joined(ex, 1);
  std::vector<PairResult> results(pairs);
  std::vector<std::unique_ptr<U64Channel>> channels;
  channels.reserve(pairs);
  std::uint64_t finished = 0;
  const std::uint64_t target = 2 * pairs;
  auto join = [&](const char* who) {
    return [&, who](std::exception_ptr e) {
      if (e) out.note(std::string(who) + " failed: " + what(e));
      if (++finished == target) joined.try_send(asio::error_code{}, std::uint64_t{0});
    };
  };
  Meter meter;
  for (std::uint64_t p = 0; p < pairs; ++p) {
    channels.push_back(std::make_unique<U64Channel>(ex, static_cast<std::size_t>(capacity)));
    asio::co_spawn(ex, producer(*channels.back(), messages, results[p]), join("producer"));
    asio::co_spawn(ex, consumer(*channels.back(), results[p]), join("consumer"));
  }
  co_await joined.async_receive(asio::use_awaitable);
  out.m = meter.stop();
  const std::uint64_t want = expected_sum(messages);
  for (const PairResult& r : results) {
    out.ops += r.received;
    if (!r.producer_done) out.note("a producer did not finish");
    if (!r.consumer_done)
      out.note("a consumer did not finish");
    else if (r.received != messages || r.sum != want)
      out.note("consumer got " + std::to_string(r.received) + " messages summing to " + std::to_string(r.sum) +
               " (expected " + std::to_string(messages) + " summing to " + std::to_string(want) + ")");
  }
  out.finished = true;
}

[[noreturn]] void channel_bench(const Args& a) {
  a.only({"messages", "pairs", "capacity", "in"});
  std::uint64_t messages = a.uint("messages", std::nullopt, 1, std::uint64_t{1} << 40);
  std::uint64_t pairs = a.uint("pairs", std::nullopt, 1, std::uint64_t{1} << 20);
  std::uint64_t capacity = a.uint("capacity", 1024, 1, std::uint64_t{1} << 24);
  a.place();
  if (messages > UINT64_MAX / pairs) usage_exit("channel", "--messages x --pairs overflows");
  Outcome out;
  run_task(out, [&] { return channel_body(messages, pairs, capacity, out); });
  Report r = micro_report("channel");
  r.str("channel", "asio::experimental::channel<void(asio::error_code, std::uint64_t)>")
      .uint("messages", messages)
      .uint("pairs", pairs)
      .uint("capacity", capacity);
  finish_micro(r, out, messages * pairs);
}

// ------------------------------------------------------------------------------------------------
// xchannel: one producer io_context/thread and one consumer io_context/thread

using XChannel = asio::experimental::concurrent_channel<void(asio::error_code, std::uint64_t)>;

struct Side {
  bool done = false;
  std::uint64_t received = 0, sum = 0;
  std::string error;
};

asio::awaitable<void> xproducer(XChannel& ch, std::uint64_t messages, Side& side) {
  co_await send_all(ch, messages);
  side.done = true;
}

asio::awaitable<void> xconsumer(XChannel& ch, Side& side) {
  co_await receive_all(ch, side.received, side.sum);
  side.done = true;
}

// The first two CPUs this process may run on, or {-1, -1}.
std::pair<int, int> two_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {-1, -1};
  int found[2] = {-1, -1}, k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < 2; ++c)
    if (CPU_ISSET(c, &set)) found[k++] = c;
  return k == 2 ? std::pair{found[0], found[1]} : std::pair{-1, -1};
}

// Runs ctx on this thread, pinned to cpu (when >= 0), after every thread reached `start`. A failed
// pin is recorded in `pin_error` (the run goes on unpinned and says so).
void run_side(asio::io_context& ctx, int cpu, std::barrier<>& start, Side& side, std::string& pin_error) {
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0)
      pin_error = "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(e);
  }
  start.arrive_and_wait();
  try {
    ctx.run();
  } catch (const std::exception& e) {
    if (side.error.empty()) side.error = std::string("io_context::run: ") + e.what();
  }
}

[[noreturn]] void xchannel_bench(const Args& a) {
  a.only({"messages", "capacity", "in"});
  std::uint64_t messages = a.uint("messages", std::nullopt, 1, std::uint64_t{1} << 40);
  std::uint64_t capacity = a.uint("capacity", 1024, 1, std::uint64_t{1} << 24);
  a.place();
  auto [pcpu, ccpu] = two_cpus();
  asio::io_context pctx(1), cctx(1);
  XChannel ch(cctx.get_executor(), static_cast<std::size_t>(capacity));
  Side ps, cs;
  asio::co_spawn(pctx, xproducer(ch, messages, ps), [&](std::exception_ptr e) {
    if (e && ps.error.empty()) ps.error = "producer failed: " + what(e);
  });
  asio::co_spawn(cctx, xconsumer(ch, cs), [&](std::exception_ptr e) {
    if (e && cs.error.empty()) cs.error = "consumer failed: " + what(e);
  });
  std::barrier<> start(3);
  std::string ppin, cpin;
  std::thread tp([&] { run_side(pctx, pcpu, start, ps, ppin); });
  std::thread tc([&] { run_side(cctx, ccpu, start, cs, cpin); });
  Meter meter;
  start.arrive_and_wait();
  tp.join();
  tc.join();
  Outcome out;
  out.m = meter.stop();
  out.ops = cs.received;
  out.finished = ps.done && cs.done;
  if (!ps.error.empty()) out.note(ps.error);
  if (!cs.error.empty()) out.note(cs.error);
  if (!ps.done && ps.error.empty()) out.note("the producer did not finish");
  if (!cs.done && cs.error.empty()) out.note("the consumer did not finish");
  const std::uint64_t want = expected_sum(messages);
  if (cs.done && (cs.received != messages || cs.sum != want))
    out.note("consumer got " + std::to_string(cs.received) + " messages summing to " + std::to_string(cs.sum) +
             " (expected " + std::to_string(messages) + " summing to " + std::to_string(want) + ")");
  Report r("xchannel", "plain");
  r.str("driver", "asio io_context x2 (one per thread, concurrency hint 1; no I/O objects, reactor not started)")
      .str("in", "task");
  std::string cpus = pcpu >= 0 ? "producer " + std::to_string(pcpu) + ", consumer " + std::to_string(ccpu)
                               : "unpinned (fewer than 2 CPUs allowed)";
  if (!ppin.empty() || !cpin.empty()) cpus += " (" + ppin + (ppin.empty() || cpin.empty() ? "" : "; ") + cpin + ")";
  r.str("channel",
        "asio::experimental::concurrent_channel<void(asio::error_code, std::uint64_t)> (two io_contexts on two threads)")
      .uint("capacity", capacity)
      .uint("messages", messages)
      .str("cpus", cpus)
      .num("msgs_per_sec", out.m.seconds > 0 ? static_cast<double>(out.ops) / out.m.seconds : NAN, 1);
  finish_micro(r, out, messages);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view s = argv[i];
    if (s == "-h" || s == "--help" || (i == 1 && s == "help")) {
      std::fputs(usage_text().c_str(), stdout);
      return 0;
    }
  }
  std::string bench = argc >= 2 && argv[1][0] != '-' && argv[1][0] != '\0' ? argv[1] : "none";
  try {
    Args a(argc, argv);
    if (a.cmd == "spawn") spawn_bench(a);
    if (a.cmd == "yield") yield_bench(a);
    if (a.cmd == "channel") channel_bench(a);
    if (a.cmd == "xchannel") xchannel_bench(a);
    throw UsageError{"unknown subcommand '" + a.cmd + "'"};
  } catch (const UsageError& e) {
    usage_exit(bench, e.msg);
  } catch (const std::bad_alloc&) {
    fail(bench, "plain", kExitFailed, "out of memory");
  } catch (const std::exception& e) {
    fail(bench, "plain", kExitFailed, e.what());
  }
}
