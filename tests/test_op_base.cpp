// op/base.hpp: what every operation shares (NOP as the simplest one): the kernel's result,
// and -ENXIO outside a runtime.
#include <gtest/gtest.h>

#include "op_helpers.hpp"

using ringo::Task;
namespace op = ringo::op;
using namespace ringo_test;

namespace {

TEST(OpNop, CompletesWithZero) {
    EXPECT_EQ(run([]() -> Task<int> { co_return co_await op::nop(); }), 0);
}

TEST(OpNop, WithoutRuntimeYieldsEnxio) {
    // A task resumed by hand, outside any runtime.
    auto t = []() -> Task<int> { co_return co_await op::nop(); }();
    auto h = t.handle();
    h.resume();
    ASSERT_TRUE(h.done());
    EXPECT_EQ(h.promise().result(), -ENXIO);
}

} // namespace
