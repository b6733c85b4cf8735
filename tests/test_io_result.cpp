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

// ---------------------------------------------------------------- what failed, and the
// members named as std::expected's

namespace more {

using ringo::Result;

using ringo::Failure;
using ringo::detail::ErrorNote;

std::string what_of(const Result<int>& r) {
    try {
        (void)r.value();
    } catch (const std::system_error& e) {
        return e.what();
    }
    return "(no exception)";
}

TEST(ResultNote, TheExceptionNamesWhatFailed) {
    Result<int> r(ringo::errno_code(-ECONNREFUSED), ErrorNote::made("connect to", "127.0.0.1:9"));
    const std::string refused = std::system_category().message(ECONNREFUSED);
    EXPECT_EQ(what_of(r), "connect to 127.0.0.1:9: " + refused);
    EXPECT_STREQ(r.context(), "connect to 127.0.0.1:9");
    EXPECT_EQ(r.describe(), "connect to 127.0.0.1:9: " + refused);
    EXPECT_EQ(r.message(), refused); // the error's own text, as before
    EXPECT_EQ(r.error(), std::errc::connection_refused);
    Result<int> plain = ringo::errno_code(-ECONNREFUSED);
    EXPECT_EQ(what_of(plain), refused);
    EXPECT_STREQ(plain.context(), "");
    Result<int> named = ringo::result_of<int>(-EBADF, "read");
    EXPECT_EQ(what_of(named), "read: " + std::system_category().message(EBADF));
    Result<int> ok = 3;
    EXPECT_STREQ(ok.context(), "");
    EXPECT_EQ(ok.describe(), "ok");
}

// A static text may start at any address, an odd one too: it is never taken for a made one.
TEST(ResultNote, StaticTextsAtAnyAddress) {
    static const char names[] = "xxread";
    for (int off = 0; off < 4; ++off) {
        Result<int> r(ringo::errno_code(-EIO), ErrorNote(names + off));
        Result<int> copy = r;
        EXPECT_STREQ(copy.context(), names + off);
    }
}

TEST(ResultNote, CopiesShareTheMadeTextAndOutliveTheOriginal) {
    std::unique_ptr<Result<int>> a =
        std::make_unique<Result<int>>(ringo::errno_code(-EPIPE), ErrorNote::made("write to", "[::1]:80"));
    Result<int> b = *a;
    Result<int> c = std::move(*a);
    a.reset();
    EXPECT_STREQ(b.context(), "write to [::1]:80");
    EXPECT_STREQ(c.context(), "write to [::1]:80");
    b = Result<int>(5);
    EXPECT_STREQ(c.context(), "write to [::1]:80");
}

TEST(ResultNote, VoidResultsToo) {
    ringo::Result<void> r = ringo::Result<void>::from_res(-ENOENT, ErrorNote::made("open", "/etc/missing"));
    try {
        r.value();
        ADD_FAILURE() << "no exception";
    } catch (const std::system_error& e) {
        EXPECT_EQ(std::string(e.what()), "open /etc/missing: " + std::system_category().message(ENOENT));
        EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    }
    EXPECT_TRUE(ringo::Result<void>::from_res(0, "x").has_value());
}

TEST(ResultNote, FailurePassesTheNoteOn) {
    Result<int> inner(ringo::errno_code(-ENOENT), ErrorNote::made("open", "/a"));
    Result<std::string> outer = inner.failure();
    EXPECT_FALSE(outer);
    EXPECT_STREQ(outer.context(), "open /a");
    EXPECT_EQ(outer.error(), std::errc::no_such_file_or_directory);
    ringo::Result<void> v = outer.failure();
    EXPECT_STREQ(v.context(), "open /a");
    Result<int> back = v.failure();
    EXPECT_STREQ(back.context(), "open /a");
    Result<std::string> by_code = inner.error(); // the code alone: no note
    EXPECT_STREQ(by_code.context(), "");
}

TEST(ResultExpected, HasValueAndTheMonadicMembers) {
    Result<int> two = 2;
    Result<int> bad(ringo::errno_code(-EIO), "read");
    EXPECT_TRUE(two.has_value());
    EXPECT_FALSE(bad.has_value());

    auto half = [](int v) -> Result<double> { return v / 2.0; };
    Result<double> h = two.and_then(half);
    ASSERT_TRUE(h);
    EXPECT_EQ(*h, 1.0);
    Result<double> hb = bad.and_then(half);
    EXPECT_EQ(hb.error(), std::errc::io_error);
    EXPECT_STREQ(hb.context(), "read"); // the note goes along

    Result<std::string> t = two.transform([](int v) { return std::to_string(v * 10); });
    EXPECT_EQ(*t, "20");
    Result<std::string> tb = bad.transform([](int v) { return std::to_string(v); });
    EXPECT_EQ(tb.error(), std::errc::io_error);
    int seen = 0;
    ringo::Result<void> tv = two.transform([&](int v) { seen = v; });
    EXPECT_TRUE(tv);
    EXPECT_EQ(seen, 2);

    Result<int> recovered = bad.or_else([](std::error_code e) -> Result<int> { return e.value() == EIO ? 0 : -1; });
    EXPECT_EQ(*recovered, 0);
    Result<int> untouched = two.or_else([](std::error_code) -> Result<int> { return 99; });
    EXPECT_EQ(*untouched, 2);

    // Moved from: and_then on an rvalue hands the value over.
    Result<std::unique_ptr<int>> p = std::make_unique<int>(4);
    Result<int> got = std::move(p).and_then([](std::unique_ptr<int>&& q) -> Result<int> { return *q; });
    EXPECT_EQ(*got, 4);

    ringo::Result<void> ok;
    Result<int> from_void = ok.and_then([]() -> Result<int> { return 1; });
    EXPECT_EQ(*from_void, 1);
    Result<int> tr = ok.transform([] { return 5; });
    EXPECT_EQ(*tr, 5);
    ringo::Result<void> failed = ringo::errno_code(-EAGAIN);
    EXPECT_EQ(failed.transform([] { return 5; }).error(), std::errc::resource_unavailable_try_again);
    EXPECT_TRUE(failed.or_else([](std::error_code) -> ringo::Result<void> { return {}; }).has_value());
}

} // namespace more
