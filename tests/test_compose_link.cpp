// link, hard_link, drain and always_async (compose/link.hpp).
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "compose_helpers.hpp"

namespace {

// ---------------------------------------------------------------- link

TEST(Link, ChainRunsInOrder) {
    ringo_test::TempDir dir;
    std::string path = dir.file("l");
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        char buf[8] = {};
        auto res = co_await ringo::link(op::write(fd, "linked", 6, 0), op::fsync(fd), op::read(fd, buf, 6, 0));
        EXPECT_EQ(std::string(buf, 6), "linked");
        co_return res;
    });
    EXPECT_EQ(r, std::make_tuple(6, 0, 6));
    ::close(fd);
}

TEST(Link, FirstFailureCancelsTheRest) {
    const int bad = kNotAnFd;
    auto r = run([&]() -> Task<std::tuple<int, int, int>> {
        char c;
        co_return co_await ringo::link(op::read(bad, &c, 1, 0), op::nop(), op::nop());
    });
    EXPECT_EQ(r, std::make_tuple(-EBADF, -ECANCELED, -ECANCELED));
}

TEST(Link, HardLinkContinuesAfterFailure) {
    const int bad = kNotAnFd;
    auto r = run([&]() -> Task<std::tuple<int, int>> {
        char c;
        co_return co_await ringo::hard_link(op::read(bad, &c, 1, 0), op::nop());
    });
    EXPECT_EQ(r, std::make_tuple(-EBADF, 0));
}

// Spawns `gathered` tasks that each start a nop, yields so that they run (their SQEs are then
// gathered in the SQ, not yet submitted), and awaits a chain of 1 + sizeof...(I) whose head (a
// timeout, which fails with -ETIME) is followed by nops. Yields every member's result.
template <std::size_t... I>
Task<std::vector<int>> chain_after_gathered(Runtime& rt, unsigned gathered, unsigned& seen, std::index_sequence<I...>) {
    std::vector<ringo::JoinHandle<int>> hs;
    for (unsigned i = 0; i < gathered; ++i)
        hs.push_back(ringo::spawn([]() -> Task<int> { co_return co_await op::nop(); }()));
    // Until every one has run and gathered its SQE (one yield in FIFO order).
    for (int i = 0; i < 100'000 && ringo_test::ring_of(rt).pending() < gathered; ++i)
        co_await ringo::yield();
    seen = ringo_test::ring_of(rt).pending();
    auto res = co_await ringo::link(op::timeout(1ms), ((void)I, op::nop())...);
    for (auto& h : hs)
        EXPECT_EQ(co_await h, 0);
    co_return std::apply([](auto... r) { return std::vector<int>{r...}; }, res);
}

template <std::size_t Nops>
void expect_chain_kept_whole(unsigned gathered) {
    SCOPED_TRACE(testing::Message() << "chain of " << Nops + 1 << " after " << gathered << " gathered SQEs");
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(4)};
    ASSERT_EQ(ringo_test::ring_of(rt).sq_entries(), 4u);
    unsigned seen = 0;
    auto r = rt.block_on(chain_after_gathered(rt, gathered, seen, std::make_index_sequence<Nops>{}));
    EXPECT_EQ(seen, gathered); // the situation the test is about
    std::vector<int> want(Nops + 1, -ECANCELED);
    want[0] = -ETIME;
    EXPECT_EQ(r, want);
}

TEST(Link, ChainIsNeverSplitAcrossSubmissions) {
    // SQ of 4 with SQEs already gathered: a chain does not fit in what is left. Were it started
    // there and split by the forced flush, its head (a timeout, which fails with -ETIME) would
    // end that submission as a chain of its own, and the members in the next submission would
    // run unlinked from it and succeed. Kept whole, they are cancelled.
    for (unsigned gathered = 2; gathered <= 3; ++gathered)
        expect_chain_kept_whole<2>(gathered); // a chain of 3 (3 after 3 queued)
    for (unsigned gathered = 1; gathered <= 3; ++gathered)
        expect_chain_kept_whole<3>(gathered); // a chain of 4: the whole SQ
}

TEST(Link, CancelledWhileWaitingEndsAfterEveryMembersCqe) {
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on([](int fd, int peer, char* b) -> Task<std::pair<std::tuple<int, int, int>, std::uint32_t>> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<std::pair<std::tuple<int, int, int>, std::uint32_t>> {
            auto res = co_await ringo::link(op::recv(f, bb, 4), op::nop(), op::nop());
            co_return std::pair{res, in_flight()};
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 3u); // the whole chain is in the kernel
        h.cancel();
        auto out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(r.first, std::make_tuple(-ECANCELED, -ECANCELED, -ECANCELED));
    EXPECT_EQ(r.second, 0u);
}

TEST(Link, HardLinkCancelledWhileWaitingGoesOnAfterTheCancelledMember) {
    // The recv is cancelled; a hard link goes on after a failure, so the nop still runs.
    SocketPair sp;
    char buf[4] = {'-', '-', '-', '-'};
    Runtime rt;
    auto r = rt.block_on([](int fd, int peer, char* b) -> Task<std::pair<std::tuple<int, int>, std::uint32_t>> {
        auto h = ringo::spawn([](int f, char* bb) -> Task<std::pair<std::tuple<int, int>, std::uint32_t>> {
            auto res = co_await ringo::hard_link(op::recv(f, bb, 4), op::nop());
            co_return std::pair{res, in_flight()};
        }(fd, b));
        co_await ringo::sleep_for(2ms);
        EXPECT_EQ(in_flight(), 2u);
        h.cancel();
        auto out = co_await h;
        co_await expect_no_recv_left(fd, peer, b, 4);
        co_return out;
    }(sp.fd[0], sp.fd[1], buf));
    EXPECT_EQ(r.first, std::make_tuple(-ECANCELED, 0));
    EXPECT_EQ(r.second, 0u);
}

TEST(Link, LongerThanTheSqIsEinval) {
    Runtime rt{ringo::RuntimeOptions{}.sq_entries(2)};
    auto r = rt.block_on(
        []() -> Task<std::tuple<int, int, int>> { co_return co_await ringo::link(op::nop(), op::nop(), op::nop()); }());
    EXPECT_EQ(r, std::make_tuple(-EINVAL, -EINVAL, -EINVAL));
}

TEST(Decorators, DrainAndAlwaysAsync) {
    auto r = run([]() -> Task<std::pair<int, int>> {
        int a = co_await ringo::drain(op::nop());
        int b = co_await ringo::always_async(op::nop());
        co_return std::pair{a, b};
    });
    EXPECT_EQ(r, std::make_pair(0, 0));
    static_assert(ringo::Operation<op::Nop>);
    static_assert(!ringo::Operation<Task<int>>);
    static_assert(!ringo::Operation<ringo::detail::SleepAwaiter>);
}

} // namespace
