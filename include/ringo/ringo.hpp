// ringo/ringo.hpp - the umbrella header.
#pragma once

#include <ringo/uring/compat.hpp>
#include <ringo/uring/probe.hpp>
#include <ringo/uring/ring.hpp>

#include <ringo/core/options.hpp>
#include <ringo/core/runtime.hpp>
#include <ringo/core/task.hpp>

#include <ringo/op/base.hpp>
#include <ringo/op/file.hpp>
#include <ringo/op/path.hpp>
#include <ringo/op/socket.hpp>
#include <ringo/op/timeout.hpp>
