//! The monoio runtime of both binaries (ringo-bench-monoio and, built with the `xthread`
//! feature, ringo-bench-monoio-xthread): one single-threaded runtime on the io_uring
//! driver (`IoUringDriver`, chosen explicitly, never the epoll fallback).

use monoio::IoUringDriver;
use ringo_bench_common as common;

/// Submission queue entries (monoio's own default, stated explicitly).
const ENTRIES: u32 = 1024;

pub struct Monoio;

impl common::Runtime for Monoio {
    const IMPL: &'static str = "monoio";
    /// With the `xthread` feature monoio is built with its `sync` feature, which changes the
    /// runtime (see xthread.rs); the line says so.
    const DRIVER: &'static str = if cfg!(feature = "xthread") {
        "io_uring (monoio IoUringDriver, 1024 entries, `sync` feature)"
    } else {
        "io_uring (monoio IoUringDriver, 1024 entries)"
    };
    type Rt = monoio::Runtime<IoUringDriver>;

    fn block_on<F: std::future::Future>(rt: &mut Self::Rt, f: F) -> F::Output {
        rt.block_on(f)
    }

    fn build(bench: &str, variant: &str) -> Self::Rt {
        monoio::RuntimeBuilder::<IoUringDriver>::new()
            .with_entries(ENTRIES)
            .build()
            .unwrap_or_else(|e| Self::fail(bench, variant, format!("cannot build the monoio io_uring runtime: {e}")))
    }
}
