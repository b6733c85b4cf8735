#include <ringo/core/runtime_pool.hpp>

#include <pthread.h>
#include <sched.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <latch>
#include <system_error>

#include "report.hpp"

namespace ringo {

namespace detail {

void switch_to_misuse(const char* what) { throw std::logic_error(what); }

void migrate(PromiseBase& root, Runtime& from, Runtime& to, std::coroutine_handle<> h) {
    // Pools count their live tasks: a task leaving one pool for another runtime moves its count.
    PoolLink* fl = detail::RuntimeAccess::registry(from).pool_link();
    PoolLink* tl = detail::RuntimeAccess::registry(to).pool_link();
    if (tl && tl != fl)
        tl->task_started();
    root.own_ctx_.unlink(); // leaves `from`'s tree; `to` hangs it in its own when it arrives
    // A coroutine of `from` waiting for this task becomes a waiter on another runtime: link
    // it, so that `from` withdraws it if it goes first. (Waiters of other runtimes linked
    // themselves when they began to wait; only `from`'s thread registers `from`'s waiters.)
    std::uintptr_t j = root.join_.load(std::memory_order_acquire);
    // A tagged waiter is linked already and may be withdrawn and freed by its own thread
    // meanwhile: not touched. An untagged one is a coroutine of this thread (thread joins
    // are tagged, and need no link: they are woken wherever the task ends).
    if (is_local_waiter(j)) {
        auto* w = reinterpret_cast<JoinWaiter*>(j);
        link_join_waiter(*w, root.join_);
        root.join_.store(j | join_linked_tag, std::memory_order_release);
    }
    // Published before the task is posted: a cancel() that reads the old owner has set the
    // flag first, and `to` checks that flag when the task arrives (Runtime::drain_remote).
    std::atomic_ref<Runtime*>(root.owner_).store(&to, std::memory_order_seq_cst);
    detail::RuntimeAccess::post_migration(to, root, h); // from here on the task may run on `to`
    if (fl && fl != tl)
        fl->task_ended();
}

namespace {

// The root task of every pool thread: suspends until the pool posts it back (stop).
struct Park {
    std::coroutine_handle<>* slot;
    std::latch* started;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
        *slot = h;
        started->count_down();
    }
    void await_resume() const noexcept {}
};

Task<void> park(std::coroutine_handle<>* slot, std::latch* started) { co_await Park{slot, started}; }

Task<RuntimeStats> stats_here() { co_return Runtime::current()->stats(); }

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set))
                cpus.push_back(c);
    }
    if (cpus.empty())
        cpus.push_back(0);
    return cpus;
}

} // namespace

} // namespace detail

struct RuntimePool::Start {
    std::latch started;
    std::latch teardown;
    explicit Start(std::size_t n) : started(static_cast<std::ptrdiff_t>(n)), teardown(static_cast<std::ptrdiff_t>(n)) {}
};

PoolOptions& PoolOptions::runtime_for(std::function<RuntimeOptions(std::size_t index)> f) {
    runtime_for_ = std::move(f);
    return *this;
}

RuntimeOptions PoolOptions::options_for(std::size_t i) const { return runtime_for_ ? runtime_for_(i) : runtime_; }

RuntimePool::RuntimePool(std::size_t threads, const RuntimeOptions& options)
    : RuntimePool(threads, PoolOptions{}.runtime(options)) {}

RuntimePool::RuntimePool(std::size_t threads, const PoolOptions& options) {
    if (threads == 0)
        throw std::invalid_argument("ringo: RuntimePool needs at least one thread (got 0)");
    std::vector<RuntimeOptions> opts;
    opts.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i)
        opts.push_back(options.options_for(i));
    std::vector<int> cpus;
    if (options.pinned())
        cpus = detail::allowed_cpus();
    start_ = std::make_unique<Start>(threads);
    slots_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i)
        slots_.push_back(std::make_unique<Slot>());
    std::size_t launched = 0;
    try {
        for (; launched < threads; ++launched) {
            int cpu = cpus.empty() ? -1 : cpus[launched % cpus.size()];
            Slot& s = *slots_[launched];
            s.thread = std::thread([this, &s, o = opts[launched], cpu] { thread_main(s, o, cpu); });
        }
    } catch (...) {
        // Threads that could not be created never count down: do it for them.
        for (std::size_t i = launched; i < threads; ++i) {
            start_->started.count_down();
            start_->teardown.count_down();
        }
        start_->started.wait();
        stop_threads();
        throw;
    }
    start_->started.wait();
    for (auto& s : slots_) {
        if (s->error) {
            std::exception_ptr e = s->error;
            accepting_.store(false);
            stop_threads();
            std::rethrow_exception(e);
        }
    }
}

void RuntimePool::thread_main(Slot& s, const RuntimeOptions& opts, int cpu) {
    std::unique_ptr<Runtime> rt;
    try {
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            int r = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
            if (r != 0)
                throw std::system_error(r, std::generic_category(),
                                        "ringo: RuntimePool could not pin a thread to its CPU");
        }
        rt = std::make_unique<Runtime>(opts);
        detail::RuntimeAccess::registry(*rt).set_pool_link(&link_);
        s.rt = rt.get();
    } catch (...) {
        s.error = std::current_exception();
        start_->started.count_down();
        start_->teardown.count_down();
        return;
    }
    try {
        rt->block_on(detail::park(&s.parked, &start_->started));
    } catch (...) {
        // The loop failed (the ring broke): the pool can no longer use this runtime.
        s.error = std::current_exception();
    }
    // Every wake-up this ring sent must have reached its target before any runtime of the
    // pool closes its ring; then all of them may go.
    detail::RuntimeAccess::finish_outgoing_wakes(*rt);
    s.final_stats = rt->stats();
    start_->teardown.arrive_and_wait();
    rt.reset();
}

RuntimePool::~RuntimePool() {
    // A destructor must not throw: a failure to stop (a thread that cannot be joined) is
    // reported instead.
    detail::run_reporting_failure("~RuntimePool: shutdown failed", "", [this] { shutdown(); });
}

Runtime& RuntimePool::runtime(std::size_t i) const {
    if (i >= slots_.size())
        throw std::out_of_range("ringo: RuntimePool::runtime: no runtime with that index");
    Runtime* rt = slots_[i]->rt;
    if (!rt)
        throw std::logic_error("ringo: RuntimePool::runtime after shutdown");
    return *rt;
}

std::size_t RuntimePool::index_of(const Runtime* rt) const noexcept {
    if (rt)
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i]->rt == rt)
                return i;
    return slots_.size();
}

void RuntimePool::begin_shutdown() {
    if (Runtime* cur = Runtime::current(); cur && index_of(cur) < slots_.size())
        throw std::logic_error("ringo: RuntimePool shutdown from one of its own threads would wait for itself");
    accepting_.store(false, std::memory_order_seq_cst);
    // Under the lock: an owner removing its hook (a listener being destroyed) waits for it.
    std::lock_guard lk(hooks_m_);
    for (auto& h : hooks_)
        h.second();
}

namespace detail {
bool PoolLink::wait_idle(std::int64_t timeout_ns) noexcept {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        // The count first: a task that ends after this load changes it, and the sleep below
        // returns at once.
        const std::uint32_t seen = emptied.load(std::memory_order_seq_cst);
        if (live.load(std::memory_order_seq_cst) == 0)
            return true;
        std::int64_t left = -1;
        if (timeout_ns >= 0) {
            left = timeout_ns - std::chrono::nanoseconds(std::chrono::steady_clock::now() - start).count();
            if (left <= 0)
                return live.load(std::memory_order_seq_cst) == 0;
        }
        futex_sleep(emptied, seen, left);
    }
}
} // namespace detail

bool RuntimePool::wait_idle_for(std::chrono::milliseconds d) {
    // A wait of more than about 292 years (what nanoseconds hold) has no limit.
    constexpr auto most = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds::max());
    if (d >= most)
        return link_.wait_idle(-1);
    return link_.wait_idle(d.count() < 0 ? 0 : std::chrono::nanoseconds(d).count());
}

void RuntimePool::shutdown() {
    std::lock_guard lk(m_);
    if (stopped_)
        return;
    begin_shutdown();
    link_.wait_idle(-1);
    stop_threads();
}

void RuntimePool::shutdown_now() {
    std::lock_guard lk(m_);
    if (stopped_)
        return;
    begin_shutdown();
    cancel_until_idle();
    stop_threads();
}

bool RuntimePool::shutdown_for(std::chrono::milliseconds grace) {
    std::lock_guard lk(m_);
    if (stopped_)
        return true;
    begin_shutdown();
    bool in_time = wait_idle_for(grace);
    if (!in_time)
        cancel_until_idle();
    stop_threads();
    return in_time;
}

void RuntimePool::cancel_until_idle() {
    // Tasks that start, or arrive by switch_to, after a sweep are caught by the next one.
    do {
        for (auto& s : slots_)
            detail::RuntimeAccess::request_cancel_all(*s->rt);
    } while (!wait_idle_for(std::chrono::milliseconds(10)));
}

void RuntimePool::stop_threads() {
    for (auto& s : slots_)
        if (s->parked)
            s->rt->post(s->parked);
    for (auto& s : slots_) {
        if (s->thread.joinable())
            s->thread.join();
        s->rt = nullptr;
    }
    stopped_ = true;
}

std::vector<RuntimeStats> RuntimePool::stats() {
    std::vector<RuntimeStats> out;
    std::lock_guard lk(m_);
    if (stopped_) {
        for (auto& s : slots_)
            out.push_back(s->final_stats);
        return out;
    }
    if (Runtime* cur = Runtime::current(); cur && index_of(cur) < slots_.size())
        throw std::logic_error("ringo: RuntimePool::stats from one of its own threads; use Runtime::stats there");
    for (auto& s : slots_)
        out.push_back(ringo::spawn(*s->rt, detail::stats_here()).join());
    return out;
}

std::uint64_t RuntimePool::add_shutdown_hook(std::function<void()> fn) {
    std::lock_guard lk(hooks_m_);
    std::uint64_t id = next_hook_++;
    hooks_.emplace_back(id, std::move(fn));
    return id;
}

void RuntimePool::remove_shutdown_hook(std::uint64_t id) {
    std::lock_guard lk(hooks_m_);
    for (auto it = hooks_.begin(); it != hooks_.end(); ++it) {
        if (it->first == id) {
            hooks_.erase(it);
            return;
        }
    }
}

} // namespace ringo
