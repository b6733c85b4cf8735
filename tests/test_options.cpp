#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <sys/resource.h>

#include <stdexcept>
#include <system_error>

using ringo::Runtime;
using ringo::RuntimeOptions;
namespace setup = ringo::uring::compat::setup;

namespace {

TEST(Options, DefaultsAskForSingleIssuerDeferTaskrun) {
    io_uring_params p = RuntimeOptions{}.to_params();
    EXPECT_TRUE(p.flags & setup::single_issuer);
    EXPECT_TRUE(p.flags & setup::defer_taskrun);
    EXPECT_TRUE(p.flags & setup::submit_all);
    EXPECT_FALSE(p.flags & setup::sqpoll);
    EXPECT_FALSE(p.flags & setup::iopoll);
    EXPECT_FALSE(p.flags & setup::coop_taskrun);
    EXPECT_FALSE(p.flags & setup::cqsize);
    EXPECT_TRUE(RuntimeOptions{}.ring_params().register_ring_fd);
    EXPECT_EQ(RuntimeOptions{}.ring_params().sq_entries, 256u);
}

TEST(Options, CqEntriesSetsCqsize) {
    io_uring_params p = RuntimeOptions{}.sq_entries(64).cq_entries(1024).to_params();
    EXPECT_TRUE(p.flags & setup::cqsize);
    EXPECT_EQ(p.cq_entries, 1024u);
    EXPECT_EQ(RuntimeOptions{}.sq_entries(64).ring_params().sq_entries, 64u);
}

TEST(Options, SqpollWithIdleAndCpu) {
    io_uring_params p = RuntimeOptions{}.sqpoll(true, 50, 1).to_params();
    EXPECT_TRUE(p.flags & setup::sqpoll);
    EXPECT_TRUE(p.flags & setup::sq_aff);
    EXPECT_EQ(p.sq_thread_idle, 50u);
    EXPECT_EQ(p.sq_thread_cpu, 1u);
    // SQPOLL excludes DEFER_TASKRUN: the options ask for COOP_TASKRUN instead.
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
    EXPECT_TRUE(p.flags & setup::coop_taskrun);
    io_uring_params q = RuntimeOptions{}.sqpoll(true, 10).to_params();
    EXPECT_FALSE(q.flags & setup::sq_aff);
}

TEST(Options, Iopoll) { EXPECT_TRUE(RuntimeOptions{}.iopoll().to_params().flags & setup::iopoll); }

TEST(Options, SingleIssuerOff) {
    io_uring_params p = RuntimeOptions{}.defer_taskrun(false).single_issuer(false).to_params();
    EXPECT_FALSE(p.flags & setup::single_issuer);
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
}

TEST(Options, CoopTaskrunReplacesDeferTaskrun) {
    io_uring_params p = RuntimeOptions{}.coop_taskrun().to_params();
    EXPECT_TRUE(p.flags & setup::coop_taskrun);
    EXPECT_TRUE(p.flags & setup::taskrun_flag);
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
}

TEST(Options, SubmitAllOff) { EXPECT_FALSE(RuntimeOptions{}.submit_all(false).to_params().flags & setup::submit_all); }

TEST(Options, AttachWq) {
    Runtime a;
    io_uring_params p = RuntimeOptions{}.attach_wq(a).to_params();
    EXPECT_TRUE(p.flags & setup::attach_wq);
    EXPECT_EQ(p.wq_fd, static_cast<unsigned>(a.ring_fd()));
    Runtime b{RuntimeOptions{}.attach_wq(a)};
    EXPECT_TRUE(b.setup_flags() & setup::attach_wq);
    EXPECT_EQ(b.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, FlagsInForceAreReadable) {
    Runtime rt;
    // This kernel (>= 6.1) accepts the defaults as asked.
    EXPECT_TRUE(rt.setup_flags() & setup::defer_taskrun);
    EXPECT_TRUE(rt.setup_flags() & setup::single_issuer);
    EXPECT_TRUE(rt.ring_fd_registered());
    EXPECT_TRUE(rt.features() & ringo::uring::compat::feat::nodrop);
    EXPECT_EQ(rt.ring().degradations(), 0u);
}

TEST(Options, RegisterRingFdOff) {
    Runtime rt{RuntimeOptions{}.register_ring_fd(false)};
    EXPECT_FALSE(rt.ring_fd_registered());
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesDeferTaskrunToCoopTaskrun) {
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun)};
    EXPECT_FALSE(rt.setup_flags() & setup::defer_taskrun);
    EXPECT_TRUE(rt.setup_flags() & setup::coop_taskrun);
    EXPECT_EQ(rt.ring().degradations(), 1u);
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesToNoTaskrunFlags) {
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun | setup::coop_taskrun)};
    EXPECT_FALSE(rt.setup_flags() & (setup::defer_taskrun | setup::coop_taskrun | setup::taskrun_flag));
    EXPECT_EQ(rt.ring().degradations(), 2u);
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesToPlainRing) {
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun | setup::coop_taskrun |
                                                               setup::single_issuer)};
    EXPECT_FALSE(rt.setup_flags() & (setup::single_issuer | setup::submit_all));
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, SetupFailsWithClearErrorWhenNothingWorks) {
    try {
        Runtime rt{RuntimeOptions{}.sqpoll().reject_setup_flags_for_testing(setup::sqpoll)};
        FAIL() << "expected a setup error";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("io_uring_setup"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("SQPOLL"), std::string::npos);
    }
}

TEST(Options, SqpollRuntimeWorks) {
    std::unique_ptr<Runtime> rt;
    try {
        rt = std::make_unique<Runtime>(RuntimeOptions{}.sqpoll(true, 10));
    } catch (const std::system_error& e) {
        GTEST_SKIP() << "SQPOLL not permitted here: " << e.what();
    }
    EXPECT_TRUE(rt->setup_flags() & setup::sqpoll);
    int sum = rt->block_on([]() -> ringo::Task<int> {
        int s = 0;
        for (int i = 0; i < 100; ++i)
            s += co_await ringo::op::nop();
        co_return s;
    }());
    EXPECT_EQ(sum, 0);
}

TEST(Options, BadSizesThrowInvalidArgument) {
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(0)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(1u << 20)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(64).cq_entries(32)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(64).cq_entries(1u << 20)}, std::invalid_argument);
}

TEST(Options, LowMemlockLimitGivesSetupErrorNotCrash) {
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &old), 0);
    rlimit low{0, old.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_MEMLOCK, &low), 0);
    // Kernels since 5.12 do not charge rings to RLIMIT_MEMLOCK; older ones refuse with
    // ENOMEM, which must surface as a system_error naming the limit.
    try {
        Runtime rt{RuntimeOptions{}.sq_entries(32768)};
        EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("RLIMIT_MEMLOCK"), std::string::npos);
    }
    ::setrlimit(RLIMIT_MEMLOCK, &old);
}

TEST(Options, FlagNames) {
    EXPECT_EQ(ringo::uring::setup_flags_to_string(setup::single_issuer | setup::defer_taskrun),
              "SINGLE_ISSUER|DEFER_TASKRUN");
    EXPECT_EQ(ringo::uring::setup_flags_to_string(0), "none");
}

TEST(Probe, ReadsKernelOpcodes) {
    Runtime rt;
    namespace opc = ringo::uring::compat::opcode;
    EXPECT_TRUE(rt.supports(opc::nop));
    EXPECT_TRUE(rt.supports(opc::read));
    EXPECT_TRUE(rt.supports(opc::socket));
    EXPECT_GT(rt.probe().kernel_last_op(), opc::socket);
    EXPECT_FALSE(rt.supports(200));
}

TEST(Probe, UnsupportedOpcodeCompletesWithEopnotsupp) {
    Runtime rt;
    // IORING_OP_SOCKET (5.19) is newer than the probe, so ringo consults the probe for it.
    static_assert(ringo::uring::compat::opcode::socket > ringo::uring::Probe::always_present_last);
    rt.probe().set_supported(ringo::uring::compat::opcode::socket, false);
    auto before = rt.stats().sqes_submitted;
    int r = rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::socket(AF_INET, SOCK_STREAM, 0, 0); }());
    EXPECT_EQ(r, -EOPNOTSUPP);
    EXPECT_EQ(rt.stats().sqes_submitted, before); // nothing was submitted
    // Other operations are unaffected.
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Probe, OpcodesOlderThanTheProbeAreNotGated) {
    // NOP .. EPOLL_CTL exist on every kernel that has the probe, which ringo requires.
    Runtime rt;
    for (unsigned op = 0; op <= ringo::uring::Probe::always_present_last; ++op)
        EXPECT_TRUE(rt.supports(static_cast<std::uint8_t>(op))) << "opcode " << op;
}

} // namespace
