// Stress.ChannelInterleavings: random interleavings of send, recv and close on one Channel
// between the two runtimes of a RuntimePool (two threads).
//
// Each trial draws, from a seeded PRNG, a capacity (0: rendezvous, up to 64), 1-4 producers
// and 1-4 consumers each placed on either runtime, how many values each producer sends
// (0-300), how they yield between operations, which sends and recvs go through with_timeout
// (deadlines of 0, 10 us and 100 us, so some fire while the other side is handing a value
// over), and where the channel is closed: by the producer whose send is the k-th to succeed,
// by the main thread at a random moment while the others run, or only once every producer
// has ended. Invariants:
//   - every value whose send yielded 0 is received exactly once; no value whose send failed
//     (-EPIPE after the close, -ETIME when its deadline cancelled it) is ever received;
//   - each consumer receives the values of each producer in the order they were sent;
//   - a send begun after the channel was seen closed fails with -EPIPE;
//   - once a consumer's recv has yielded nothing (closed and drained), the channel is closed
//     and another recv or try_recv yields nothing;
//   - nothing leaks: every value object is destroyed by the end of its trial, the process has
//     as many descriptors after the pool as before it, and the heap's in-use bytes stay
//     within a bound after the warm-up tenth of the trials;
//   - no hang: a watchdog ends the run with the trial it was in when no trial ends for 30 s.
// A producer retries a value whose send timed out (-ETIME), so a send that delivered its
// value but reported a timeout shows up as a duplicate.
//
// Sizes: 3 000 trials (1 000 under ThreadSanitizer and AddressSanitizer);
// RINGO_STRESS_LONG=1 runs 100 000.
// RINGO_STRESS_SEED=<n> replays the trials' choices (the interleavings themselves depend on
// the threads' timing); each run prints its seed.
#include "stress_common.hpp"

#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using ringo::Task;
using namespace ringo_stress;

namespace {

// A value that counts its live objects: the count must be back to zero once the trial's
// channel and tasks are gone.
struct Item {
    static inline std::atomic<long> live{0};
    int producer;
    int seq;
    Item(int p, int s) noexcept : producer(p), seq(s) { live.fetch_add(1, std::memory_order_relaxed); }
    Item(Item&& o) noexcept : producer(o.producer), seq(o.seq) { live.fetch_add(1, std::memory_order_relaxed); }
    Item(const Item& o) noexcept : producer(o.producer), seq(o.seq) { live.fetch_add(1, std::memory_order_relaxed); }
    Item& operator=(const Item&) noexcept = default;
    Item& operator=(Item&&) noexcept = default;
    ~Item() { live.fetch_sub(1, std::memory_order_relaxed); }
};

enum class CloseBy { producer, main_thread, after_producers };

struct Spec {
    std::size_t capacity;
    std::vector<int> counts;          // values per producer
    std::vector<std::size_t> prod_rt; // runtime of each producer
    std::vector<std::size_t> cons_rt; // runtime of each consumer
    CloseBy close_by;
    std::uint64_t close_at;                // CloseBy::producer: after this many successful sends
    std::chrono::microseconds close_after; // CloseBy::main_thread
    unsigned timeout_one_in;               // a send or recv goes through with_timeout once in this many
    unsigned yield_one_in;                 // a task yields before an operation once in this many
    std::string describe() const {
        std::string s = "capacity " + std::to_string(capacity) + ", producers {";
        for (std::size_t p = 0; p < counts.size(); ++p)
            s += (p ? " " : "") + std::to_string(counts[p]) + "@rt" + std::to_string(prod_rt[p]);
        s += "}, consumers {";
        for (std::size_t c = 0; c < cons_rt.size(); ++c)
            s += (c ? " rt" : "rt") + std::to_string(cons_rt[c]);
        s += "}, close ";
        s += close_by == CloseBy::producer ? "by the producer of send " + std::to_string(close_at)
             : close_by == CloseBy::main_thread
                 ? "by the main thread after " + std::to_string(close_after.count()) + " us"
                 : std::string("after the producers");
        return s;
    }
};

struct Trial {
    explicit Trial(const Spec& sp) : spec(sp), ch(sp.capacity), sent(sp.counts.size(), 0), got(sp.cons_rt.size()) {}
    const Spec& spec;
    ringo::Channel<Item> ch;
    std::atomic<std::uint64_t> sent_total{0};
    std::vector<int> sent;                             // per producer, written by it only
    std::vector<std::vector<std::pair<int, int>>> got; // per consumer, written by it only
    std::mutex m;
    std::vector<std::string> wrong;
    // What happened, for the summary line.
    std::atomic<std::uint64_t> send_timeouts{0}, recv_timeouts{0}, late_values{0}, refused{0};
    void wrong_outcome(std::string what) {
        std::lock_guard lk(m);
        wrong.push_back(std::move(what));
    }
};

constexpr std::chrono::microseconds deadlines[] = {0us, 10us, 100us};

Task<void> producer(Trial& t, int p, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int n = t.spec.counts[static_cast<std::size_t>(p)];
    for (int seq = 0; seq < n;) {
        if (rng() % t.spec.yield_one_in == 0)
            co_await ringo::yield();
        const bool closed_before = t.ch.is_closed();
        int r;
        if (rng() % t.spec.timeout_one_in == 0) {
            r = co_await ringo::with_timeout(t.ch.send(Item(p, seq)), deadlines[rng() % 3]);
            if (r == -ETIME) {
                t.send_timeouts.fetch_add(1, std::memory_order_relaxed);
                continue; // not sent: send it again
            }
        } else {
            r = co_await t.ch.send(Item(p, seq));
        }
        if (r == -EPIPE) {
            t.refused.fetch_add(1, std::memory_order_relaxed);
            break;
        }
        if (r != 0) {
            t.wrong_outcome("producer " + std::to_string(p) + ": send yielded " + std::to_string(r));
            break;
        }
        if (closed_before)
            t.wrong_outcome("producer " + std::to_string(p) + ": a send begun after the close succeeded");
        t.sent[static_cast<std::size_t>(p)] = ++seq;
        if (t.sent_total.fetch_add(1, std::memory_order_acq_rel) + 1 == t.spec.close_at &&
            t.spec.close_by == CloseBy::producer)
            t.ch.close();
    }
}

Task<void> consumer(Trial& t, int c, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto& mine = t.got[static_cast<std::size_t>(c)];
    const int producers = static_cast<int>(t.spec.counts.size());
    for (;;) {
        if (rng() % t.spec.yield_one_in == 0)
            co_await ringo::yield();
        std::optional<Item> v;
        if (rng() % t.spec.timeout_one_in == 0) {
            ringo::Timed<std::optional<Item>> r = co_await ringo::with_timeout(t.ch.recv(), deadlines[rng() % 3]);
            v = std::move(*r); // a value taken as the deadline passed is still the recv's
            if (r.timed_out())
                (v ? t.late_values : t.recv_timeouts).fetch_add(1, std::memory_order_relaxed);
            if (!v && r.timed_out())
                continue;
        } else {
            v = co_await t.ch.recv();
        }
        if (!v)
            break; // closed and drained
        if (v->producer < 0 || v->producer >= producers)
            t.wrong_outcome("consumer " + std::to_string(c) + ": a value from no producer");
        else
            mine.emplace_back(v->producer, v->seq);
    }
    if (!t.ch.is_closed())
        t.wrong_outcome("consumer " + std::to_string(c) + ": recv yielded nothing on an open channel");
    std::optional<Item> again = co_await t.ch.recv();
    if (again)
        t.wrong_outcome("consumer " + std::to_string(c) + ": recv yielded a value after close and drain");
    if (t.ch.try_recv())
        t.wrong_outcome("consumer " + std::to_string(c) + ": try_recv yielded a value after close and drain");
}

Spec draw(std::mt19937_64& rng) {
    static constexpr std::size_t capacities[] = {0, 1, 2, 3, 8, 64};
    Spec s;
    s.capacity = capacities[rng() % 6];
    const std::size_t producers = 1 + rng() % 4, consumers = 1 + rng() % 4;
    std::uint64_t total = 0;
    for (std::size_t p = 0; p < producers; ++p) {
        s.counts.push_back(static_cast<int>(rng() % 301));
        s.prod_rt.push_back(rng() % 2);
        total += static_cast<std::uint64_t>(s.counts.back());
    }
    for (std::size_t c = 0; c < consumers; ++c)
        s.cons_rt.push_back(rng() % 2);
    s.close_by = static_cast<CloseBy>(rng() % 3);
    s.close_at = total == 0 ? 0 : 1 + rng() % total;
    if (s.close_by == CloseBy::producer && total == 0)
        s.close_by = CloseBy::after_producers;
    s.close_after = std::chrono::microseconds(rng() % 500);
    s.timeout_one_in = 2 + static_cast<unsigned>(rng() % 15);
    s.yield_one_in = 2 + static_cast<unsigned>(rng() % 7);
    return s;
}

struct Totals {
    std::uint64_t sent = 0, received = 0, refused = 0, send_timeouts = 0, recv_timeouts = 0, late_values = 0;
};

// Runs one trial on the pool; returns what went wrong (empty: nothing).
std::vector<std::string> run_trial(ringo::RuntimePool& pool, const Spec& spec, std::mt19937_64& rng, Totals& sum) {
    std::vector<std::string> wrong;
    {
        Trial t(spec);
        std::vector<ringo::JoinHandle<void>> prods, conss;
        // Consumers first or producers first, at random.
        const bool consumers_first = rng() % 2 == 0;
        auto start_consumers = [&] {
            for (std::size_t c = 0; c < spec.cons_rt.size(); ++c)
                conss.push_back(pool.spawn_on(spec.cons_rt[c], consumer(t, static_cast<int>(c), rng())));
        };
        if (consumers_first)
            start_consumers();
        for (std::size_t p = 0; p < spec.counts.size(); ++p)
            prods.push_back(pool.spawn_on(spec.prod_rt[p], producer(t, static_cast<int>(p), rng())));
        if (!consumers_first)
            start_consumers();
        if (spec.close_by == CloseBy::main_thread) {
            std::this_thread::sleep_for(spec.close_after);
            t.ch.close();
        }
        for (auto& h : prods)
            h.join();
        t.ch.close(); // (false when it was closed already)
        for (auto& h : conss)
            h.join();

        wrong = std::move(t.wrong);
        for (int n : t.sent)
            sum.sent += static_cast<std::uint64_t>(n);
        for (auto& g : t.got)
            sum.received += g.size();
        sum.refused += t.refused.load();
        sum.send_timeouts += t.send_timeouts.load();
        sum.recv_timeouts += t.recv_timeouts.load();
        sum.late_values += t.late_values.load();
        // Exactly once, and in order per consumer.
        for (std::size_t p = 0; p < spec.counts.size(); ++p) {
            std::vector<int> all;
            for (std::size_t c = 0; c < t.got.size(); ++c) {
                int last = -1;
                for (auto [prod, seq] : t.got[c]) {
                    if (prod != static_cast<int>(p))
                        continue;
                    if (seq <= last)
                        wrong.push_back("consumer " + std::to_string(c) + " got value " + std::to_string(seq) +
                                        " of producer " + std::to_string(p) + " after value " + std::to_string(last));
                    last = seq;
                    all.push_back(seq);
                }
            }
            std::sort(all.begin(), all.end());
            std::vector<int> want(static_cast<std::size_t>(t.sent[p]));
            for (std::size_t i = 0; i < want.size(); ++i)
                want[i] = static_cast<int>(i);
            if (all != want) {
                std::string got = "producer " + std::to_string(p) + " sent values 0.." + std::to_string(t.sent[p] - 1) +
                                  ", received (sorted):";
                for (std::size_t i = 0; i < all.size() && i < 40; ++i)
                    got += " " + std::to_string(all[i]);
                wrong.push_back(got + (all.size() > 40 ? " ..." : ""));
            }
        }
        if (t.ch.size() != 0)
            wrong.push_back("values left in the channel after every consumer drained it");
    }
    if (long n = Item::live.load(); n != 0)
        wrong.push_back(std::to_string(n) + " value objects still alive after the trial");
    return wrong;
}

TEST(Stress, ChannelInterleavings) {
    const std::size_t trials = sized(3000, 100'000, 1000, 1000);
    std::mt19937_64 rng(seed("Stress.ChannelInterleavings"));
    const int fds_before = open_fds();

    std::mutex m;
    std::string current;
    std::atomic<std::size_t> done{0};
    Watchdog dog("Stress.ChannelInterleavings", 30s, [&] {
        std::lock_guard lk(m);
        return "trial " + std::to_string(done.load()) + " of " + std::to_string(trials) + ": " + current;
    });
    std::vector<std::int64_t> heap;
    std::size_t failed = 0;
    Totals sum;
    const auto t0 = std::chrono::steady_clock::now();
    {
        ringo::RuntimePool pool{2};
        std::printf("[Stress.ChannelInterleavings] engine %s, %zu trials on 2 runtimes\n",
                    pool.runtime(0).engine() == ringo::Engine::epoll ? "epoll" : "io_uring", trials);
        for (std::size_t i = 0; i < trials; ++i) {
            Spec spec = draw(rng);
            {
                std::lock_guard lk(m);
                current = spec.describe();
            }
            std::vector<std::string> wrong = run_trial(pool, spec, rng, sum);
            if (!wrong.empty() && failed++ < 3) {
                std::string all;
                for (std::size_t k = 0; k < wrong.size() && k < 10; ++k)
                    all += "\n    " + wrong[k];
                ADD_FAILURE() << "trial " << i << " (" << spec.describe() << "):" << all;
            }
            done.store(i + 1);
            dog.progress();
            if ((i + 1) % (trials / 10) == 0)
                heap.push_back(heap_in_use());
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[Stress.ChannelInterleavings] %zu trials in %.1f s: %llu values sent, %llu received, %llu sends "
                "refused (closed), %llu sends and %llu recvs timed out, %llu values taken as the deadline passed; heap "
                "in use (MiB) after each tenth:",
                trials, secs, static_cast<unsigned long long>(sum.sent), static_cast<unsigned long long>(sum.received),
                static_cast<unsigned long long>(sum.refused), static_cast<unsigned long long>(sum.send_timeouts),
                static_cast<unsigned long long>(sum.recv_timeouts), static_cast<unsigned long long>(sum.late_values));
    for (std::int64_t h : heap)
        std::printf(" %.2f", mib(h));
    std::printf("\n");
    EXPECT_EQ(failed, 0u) << "trials with a wrong outcome";
    EXPECT_EQ(open_fds(), fds_before) << "descriptors leaked";
    // The bound, from the first tenth to every later one: 1 MiB. The pool's queues and the
    // allocators' per-thread caches reach their size in the first tenth (runs here vary by
    // under 0.02 MiB after it). A channel buffer (up to 64 values) or a task frame leaked per
    // trial passes it in the long form and, from about 400 bytes a trial, in the short one;
    // the values themselves are counted exactly above.
    constexpr std::int64_t heap_bound = 1 * MiB;
    for (std::size_t i = 1; i < heap.size(); ++i)
        EXPECT_LE(heap[i] - heap[0], heap_bound) << "heap in use grew by tenth " << i;
}

} // namespace
