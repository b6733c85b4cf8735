// Result<T> (io/result.hpp): a value or a std::error_code with a readable message.
#include <ringo/io/result.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace {

using ringo::Result;

TEST(Result, HoldsAValue) {
    Result<int> r = 42;
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(static_cast<bool>(r));
    EXPECT_EQ(*r, 42);
    EXPECT_EQ(r.value(), 42);
    EXPECT_FALSE(r.error());
    EXPECT_EQ(r.message(), "ok");
    EXPECT_EQ(r.value_or(7), 42);
}

TEST(Result, HoldsAnErrorWithItsMessage) {
    Result<int> r = Result<int>::from_errno(-ECONNREFUSED);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error(), std::error_code(ECONNREFUSED, std::system_category()));
    EXPECT_EQ(r.error(), std::errc::connection_refused);
    EXPECT_EQ(r.message(), std::system_category().message(ECONNREFUSED));
    EXPECT_EQ(r.value_or(7), 7);
    try {
        (void)r.value();
        ADD_FAILURE() << "value() of an error did not throw";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), std::errc::connection_refused);
    }
}

TEST(Result, AZeroErrorCodeStillMeansFailure) {
    Result<int> r = std::error_code{};
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error(), std::errc::invalid_argument);
    ringo::Result<void> v = std::error_code{};
    EXPECT_FALSE(v.ok());
}

TEST(Result, ResultOfAKernelResult) {
    auto a = ringo::result_of<std::size_t>(17);
    ASSERT_TRUE(a);
    EXPECT_EQ(*a, 17u);
    auto b = ringo::result_of<std::size_t>(-ENOENT);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error(), std::errc::no_such_file_or_directory);
}

TEST(Result, MoveOnlyValuesAndAssignment) {
    Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
    ASSERT_TRUE(r);
    EXPECT_EQ(**r, 5);
    std::unique_ptr<int> p = std::move(r).value();
    EXPECT_EQ(*p, 5);
    Result<std::unique_ptr<int>> e = ringo::errno_code(-EBADF);
    r = std::move(e);
    EXPECT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::bad_file_descriptor);
    r = std::make_unique<int>(9);
    ASSERT_TRUE(r);
    EXPECT_EQ(**r, 9);
}

TEST(Result, CopiesValuesAndErrors) {
    Result<std::string> a = std::string("hello");
    Result<std::string> b = a;
    EXPECT_EQ(*b, "hello");
    EXPECT_EQ(b->size(), 5u);
    Result<std::string> c = ringo::errno_code(-EPIPE);
    b = c;
    EXPECT_FALSE(b);
    EXPECT_EQ(b.error(), std::errc::broken_pipe);
    EXPECT_EQ(*a, "hello");
}

TEST(Result, VoidIsSuccessOrAnError) {
    auto ok = ringo::Result<void>::from_res(0);
    EXPECT_TRUE(ok);
    EXPECT_NO_THROW(ok.value());
    auto bad = ringo::Result<void>::from_res(-EACCES);
    EXPECT_FALSE(bad);
    EXPECT_EQ(bad.error(), std::errc::permission_denied);
    EXPECT_THROW(bad.value(), std::system_error);
    EXPECT_EQ(bad.message(), std::system_category().message(EACCES));
}

} // namespace
