// ringo/version.hpp, generated from the CMake project version, says that version.
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Version, HeaderSaysTheProjectVersion) {
    EXPECT_STREQ(ringo::version_string, RINGO_EXPECTED_VERSION);
    EXPECT_EQ(RINGO_VERSION_MAJOR, RINGO_EXPECTED_MAJOR);
    EXPECT_EQ(RINGO_VERSION_MINOR, RINGO_EXPECTED_MINOR);
    EXPECT_EQ(RINGO_VERSION_PATCH, RINGO_EXPECTED_PATCH);
    EXPECT_EQ(RINGO_VERSION, RINGO_EXPECTED_MAJOR * 10000 + RINGO_EXPECTED_MINOR * 100 + RINGO_EXPECTED_PATCH);
    EXPECT_EQ(std::string(RINGO_VERSION_STRING), std::to_string(RINGO_VERSION_MAJOR) + "." +
                                                     std::to_string(RINGO_VERSION_MINOR) + "." +
                                                     std::to_string(RINGO_VERSION_PATCH));
}

} // namespace
