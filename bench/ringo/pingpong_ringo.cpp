// pingpong_ringo: ringo's version of bench/net's bench_pingpong (same command line, same JSON
// line; see bench/net/README.md). One thread, N connected stream-socket pairs (a, b), K round
// trips of a 4-byte message on each: a sends message k, b receives it, checks it and sends it
// back, a receives the echo, checks it and sends message k+1. All N pairs run at once.
//
// Written the way a ringo user would: each pair is served by two tasks, one per socket, each a
// plain loop of awaited operations (pinger on a: send, recv, check; echoer on b: recv, check,
// send). The kernel sees the same operations as the baseline's "uring" mode: every receive is
// armed before the peer's send arrives, one RECV and one SEND per message and side, all SQEs
// gathered while tasks run and submitted by the one io_uring_enter that also waits.
//
//   --mode ringo        op::recv / op::send on the socket fds
//   --mode ringo-fixed  the 2N sockets registered (op::FileTable), ops on op::Fixed{slot}
//
// System calls: io_uring_enter calls are Runtime::stats().enters; the program itself makes no
// system call in the measured region unless a pair fails (shutdown(2), counted).
#include <sys/socket.h>

#include <exception>
#include <memory>
#include <vector>

#include <ringo/op/file_table.hpp>

#include "ringo_net.hpp"

namespace {

const char* kUsage =
    "usage: pingpong_ringo --mode ringo|ringo-fixed --conns N --msgs K [--transport unix|tcp]\n"
    "                      [--cpu C] [--timeout S]\n"
    "  One thread (one ringo Runtime) bounces a 4-byte message K times over each of N socket\n"
    "  pairs; prints one JSON line (bench \"pingpong\").\n"
    "  --mode M        ringo        op::recv / op::send on the sockets (a pinger and an echoer\n"
    "                               task per pair)\n"
    "                  ringo-fixed  the same on registered files (op::Fixed slots)\n"
    "  --conns N       socket pairs, all active at once (1..20000)\n"
    "  --msgs K        round trips per pair (1..100000000)\n"
    "  --transport T   unix: AF_UNIX SOCK_STREAM socketpair() (default)\n"
    "                  tcp:  TCP pairs over 127.0.0.1 (connect + accept), TCP_NODELAY\n"
    "  --cpu C         pin the thread to CPU C (after runtime setup; default: not pinned)\n"
    "  --timeout S     give up (ok=false) after S seconds (default 120)\n";

struct Pair {
    int a = -1, b = -1;  // socket fds
    uint32_t k = 0;      // round trips completed and verified
    bool failed = false;
};

struct State {
    std::vector<Pair> pairs;
    uint32_t kmsgs = 0;
    bool fixed = false;
    uint64_t failed_pairs = 0;
    uint64_t reports = 0;
    const std::atomic<bool>* timed_out = nullptr;
};

// Same message function as bench_pingpong.
inline uint32_t message(size_t i, uint32_t k) {
    return (k + 1u) * 2654435761u ^ (static_cast<uint32_t>(i) * 40503u + 0x5bd1e995u);
}

ringo::op::FileRef ref_a(const State& s, size_t i) {
    if (s.fixed)
        return ringo::op::Fixed{static_cast<unsigned>(2 * i)};
    return s.pairs[i].a;
}
ringo::op::FileRef ref_b(const State& s, size_t i) {
    if (s.fixed)
        return ringo::op::Fixed{static_cast<unsigned>(2 * i + 1)};
    return s.pairs[i].b;
}

// Marks pair i failed (once) and shuts both sockets down, so the other side's pending receive
// ends (with 0) instead of waiting forever.
void fail_pair(State& s, size_t i, uint32_t round, const char* what, long v) {
    Pair& p = s.pairs[i];
    if (p.failed)
        return;
    p.failed = true;
    ++s.failed_pairs;
    if (!s.timed_out->load(std::memory_order_relaxed) && s.reports++ < 10)
        std::fprintf(stderr, "pingpong_ringo: pair %zu round %u: %s (%ld)\n", i, round, what, v);
    ++nb::g_sys.ctl;
    ::shutdown(p.a, SHUT_RDWR);
    ++nb::g_sys.ctl;
    ::shutdown(p.b, SHUT_RDWR);
}

// Side a: send message k, receive its echo, check it.
ringo::Task<void> pinger(State& s, size_t i) {
    const ringo::op::FileRef fd = ref_a(s, i);
    Pair& p = s.pairs[i];
    unsigned char out[4], in[4];
    for (uint32_t k = 0; k < s.kmsgs; ++k) {
        const uint32_t m = message(i, k);
        std::memcpy(out, &m, 4);
        for (unsigned sent = 0; sent < 4;) {
            int r = co_await ringo::op::send(fd, out + sent, 4 - sent, MSG_NOSIGNAL);
            if (r <= 0) {
                fail_pair(s, i, k, "send a failed", r);
                co_return;
            }
            sent += static_cast<unsigned>(r);
        }
        for (unsigned got = 0; got < 4;) {
            int r = co_await ringo::op::recv(fd, in + got, 4 - got, 0);
            if (r <= 0) {
                fail_pair(s, i, k, r == 0 ? "recv a: unexpected EOF" : "recv a failed", r);
                co_return;
            }
            got += static_cast<unsigned>(r);
        }
        if (std::memcmp(in, &m, 4) != 0) {
            fail_pair(s, i, k, "a received wrong echo", 0);
            co_return;
        }
        p.k = k + 1;
    }
}

// Side b: receive message k, check it, send it back.
ringo::Task<void> echoer(State& s, size_t i) {
    const ringo::op::FileRef fd = ref_b(s, i);
    unsigned char buf[4];
    for (uint32_t k = 0; k < s.kmsgs; ++k) {
        for (unsigned got = 0; got < 4;) {
            int r = co_await ringo::op::recv(fd, buf + got, 4 - got, 0);
            if (r <= 0) {
                fail_pair(s, i, k, r == 0 ? "recv b: unexpected EOF" : "recv b failed", r);
                co_return;
            }
            got += static_cast<unsigned>(r);
        }
        const uint32_t m = message(i, k);
        if (std::memcmp(buf, &m, 4) != 0) {
            fail_pair(s, i, k, "b received wrong bytes", 0);
            co_return;
        }
        for (unsigned sent = 0; sent < 4;) {
            int r = co_await ringo::op::send(fd, buf + sent, 4 - sent, MSG_NOSIGNAL);
            if (r <= 0) {
                fail_pair(s, i, k, "send b failed", r);
                co_return;
            }
            sent += static_cast<unsigned>(r);
        }
    }
}

ringo::Task<void> run_all(State& s) {
    std::vector<ringo::JoinHandle<void>> hs;
    hs.reserve(2 * s.pairs.size());
    for (size_t i = 0; i < s.pairs.size(); ++i) {
        hs.push_back(ringo::spawn(echoer(s, i)));
        hs.push_back(ringo::spawn(pinger(s, i)));
    }
    for (auto& h : hs)
        co_await h;
}

int tcp_pair(int lfd, int sv[2]) {
    sockaddr_in a{};
    socklen_t al = sizeof a;
    if (getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al) != 0)
        return -1;
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0)
        return -1;
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), al) != 0) {
        ::close(c);
        return -1;
    }
    int srv = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (srv < 0) {
        ::close(c);
        return -1;
    }
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(srv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sv[0] = c;
    sv[1] = srv;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    nb::Args args(argc, argv, kUsage,
                  {{"mode", true}, {"conns", true}, {"msgs", true}, {"transport", true}, {"cpu", true}, {"timeout", true}});
    const std::string mode = args.need_choice("mode", {"ringo", "ringo-fixed"});
    const size_t nconns = static_cast<size_t>(args.need_int("conns", 1, 20000));
    const uint32_t kmsgs = static_cast<uint32_t>(args.need_int("msgs", 1, 100000000));
    const std::string transport = args.get_choice("transport", "unix", {"unix", "tcp"});
    const int cpu = static_cast<int>(args.get_int("cpu", -1, 0, CPU_SETSIZE - 1));
    const double timeout_s = args.get_double("timeout", 120, 0.1, 86400);

    ::signal(SIGPIPE, SIG_IGN);
    nb::raise_nofile();
    std::string ring_setup = "-";

    auto fail_json = [&](const std::string& why) {
        std::fprintf(stderr, "pingpong_ringo: %s\n", why.c_str());
        nb::Json j;
        j.add("bench", "pingpong").add("mode", mode).add("transport", transport).add("conns", nconns)
            .add("msgs", kmsgs).add("roundtrips", 0).add("seconds", 0.0).add("ns_per_roundtrip", 0.0)
            .add("syscalls_total", 0).add("syscalls_per_rt", 0.0).add("loop_syscalls_per_rt", 0.0)
            .add("ring_setup", ring_setup).add("errors", 1).add("ok", false).add("error", why);
        j.print();
        return 1;
    };

    // ---- set-up (not measured)
    State s;
    s.kmsgs = kmsgs;
    s.fixed = mode == "ringo-fixed";
    s.pairs.resize(nconns);
    int lfd = -1;
    if (transport == "tcp") {
        lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 128) != 0)
            return fail_json(std::string("tcp listener: ") + std::strerror(errno));
    }
    auto close_all = [&] {
        for (auto& p : s.pairs) {
            if (p.a >= 0)
                ::close(p.a);
            if (p.b >= 0)
                ::close(p.b);
            p.a = p.b = -1;
        }
    };
    for (size_t i = 0; i < nconns; ++i) {
        int sv[2];
        int r = transport == "unix" ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) : tcp_pair(lfd, sv);
        if (r != 0) {
            std::string why = std::string("creating socket pair: ") + std::strerror(errno);
            close_all();
            return fail_json(why);
        }
        s.pairs[i].a = sv[0];
        s.pairs[i].b = sv[1];
    }
    if (lfd >= 0)
        ::close(lfd);

    // Room for every operation that can be in flight (two per pair, plus the runtime's own).
    unsigned want = 64;
    while (want < 4 * nconns && want < 32768)
        want *= 2;
    std::unique_ptr<ringo::Runtime> rt;
    std::unique_ptr<ringo::op::FileTable> table;
    try {
        rt = std::make_unique<ringo::Runtime>(ringo::RuntimeOptions{}.sq_entries(want).cq_entries(2 * want));
    } catch (const std::exception& e) {
        close_all();
        return fail_json(std::string("runtime setup: ") + e.what());
    }
    ring_setup = rb::ring_setup(*rt);
    if (s.fixed) {
        std::vector<int> fds;
        fds.reserve(2 * nconns);
        for (auto& p : s.pairs) {
            fds.push_back(p.a);
            fds.push_back(p.b);
        }
        table = std::make_unique<ringo::op::FileTable>(*rt);
        if (int r = table->register_files(fds); r < 0) {
            table.reset();
            rt.reset();
            close_all();
            return fail_json(std::string("registering the sockets: ") + std::strerror(-r));
        }
        ring_setup += "+fixed_files";
    }
    if (!nb::pin_cpu(cpu)) {
        table.reset();
        rt.reset();
        close_all();
        return fail_json("cannot pin to --cpu");
    }

    // The bound: at the deadline, shut every socket down (each pending receive then completes
    // with 0 and its task ends); if the run is still not over 3 s later, give up hard.
    std::atomic<bool> timed_out{false};
    s.timed_out = &timed_out;
    rb::Watchdog wd;
    wd.start(
        timeout_s,
        [&] {
            timed_out.store(true, std::memory_order_relaxed);
            for (auto& p : s.pairs) {
                ::shutdown(p.a, SHUT_RDWR);
                ::shutdown(p.b, SHUT_RDWR);
            }
        },
        [&] {
            std::fprintf(stderr, "pingpong_ringo: timed out after %.1f s and did not stop\n", timeout_s);
            nb::Json j;
            j.add("bench", "pingpong").add("mode", mode).add("transport", transport).add("conns", nconns)
                .add("msgs", kmsgs).add("roundtrips", 0).add("seconds", 0.0).add("ns_per_roundtrip", 0.0)
                .add("syscalls_total", 0).add("syscalls_per_rt", 0.0).add("loop_syscalls_per_rt", 0.0)
                .add("ring_setup", ring_setup).add("errors", nconns).add("ok", false).add("error", "timed out");
            j.print();
            std::_Exit(1);
        });

    // ---- measured region
    uint64_t errors = 0;
    const ringo::RuntimeStats st0 = rt->stats();
    const nb::SysCounters sys0 = nb::g_sys;
    const uint64_t cpu0 = nb::process_cpu_ns();
    const uint64_t t0 = nb::now_ns();
    try {
        rt->block_on(run_all(s));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pingpong_ringo: %s\n", e.what());
        ++errors;
    }
    const uint64_t t1 = nb::now_ns();
    const uint64_t cpu1 = nb::process_cpu_ns();
    const ringo::RuntimeStats st1 = rt->stats();
    nb::SysCounters sc = nb::g_sys - sys0;
    wd.stop();
    sc.loop += st1.enters - st0.enters;
    if (timed_out.load())
        std::fprintf(stderr, "pingpong_ringo: timed out after %.1f s\n", timeout_s);

    // ---- tear-down: the runtime first (cancels anything still in flight), then the fds.
    table.reset();
    rt.reset();
    close_all();

    uint64_t rts = 0;
    for (auto& p : s.pairs)
        rts += p.k;
    errors += s.failed_pairs;
    const double secs = static_cast<double>(t1 - t0) / 1e9;
    const double per = rts ? 1.0 / static_cast<double>(rts) : 0.0;
    const bool ok = errors == 0 && rts == static_cast<uint64_t>(nconns) * kmsgs;
    nb::Json j;
    j.add("bench", "pingpong")
        .add("mode", mode)
        .add("transport", transport)
        .add("conns", nconns)
        .add("msgs", kmsgs)
        .add("roundtrips", rts)
        .add("seconds", secs, 6)
        .add("ns_per_roundtrip", static_cast<double>(t1 - t0) * per, 1)
        .add("cpu_ns_per_roundtrip", static_cast<double>(cpu1 - cpu0) * per, 1)
        .add("syscalls_total", sc.total())
        .add("syscalls_per_rt", static_cast<double>(sc.total()) * per, 4)
        .add("loop_syscalls_per_rt", static_cast<double>(sc.loop) * per, 4)
        .add("io_syscalls_per_rt", static_cast<double>(sc.io) * per, 4)
        .add("ring_setup", ring_setup)
        .add("errors", errors)
        .add("ok", ok);
    j.print();
    return ok ? 0 : 1;
}
