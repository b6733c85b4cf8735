//! Monoio cross-thread channel baseline (`xchannel`) of the ringo benchmark suite: a
//! single-threaded monoio runtime (`IoUringDriver`, 1024 entries) on each of two threads,
//! pinned to two CPUs; the producer's task sends 0..M through one bounded
//! `futures::channel::mpsc` channel holding `capacity` messages to the consumer's task.
//!
//! Built with monoio's `sync` feature (a waker used from another thread panics without
//! it): a wake-up from the other thread goes through monoio's per-thread waker queue and
//! unparks the target runtime through its eventfd. That feature changes the runtime for
//! the single-thread benchmarks too, so this is a separate binary; ringo-bench-monoio is
//! built without it. See ../../README.md.

use common::Place;
use common::Runtime as _;
use futures::{SinkExt, StreamExt};
use ringo_bench_common as common;

mod rt;

use rt::Monoio;

const IMPL: &str = Monoio::IMPL;

fn usage() -> String {
    "usage: ringo-bench-monoio-xthread xchannel --messages M [--capacity 1024] [--in task]\n\
     \n\
     One producer and one consumer, each a task on its own monoio runtime and thread (pinned\n\
     to the first two CPUs the process may use), M u64 messages through one bounded\n\
     futures::channel::mpsc channel of `capacity` messages. Built with monoio's `sync`\n\
     feature, which spawns block_on's root future as a task: --in root is refused.\n\
     Prints one JSON line on stdout. Exit 0 ok, 1 failed run, 2 usage error.\n"
        .to_string()
}

fn main() {
    let u = usage();
    let a = common::parse_cli(IMPL, &u);
    common::install_panic_report(&a.cmd, IMPL);
    if a.cmd != "xchannel" {
        common::unknown_subcommand(&a, IMPL, &u);
    }
    let o = common::xchannel_opts(&a).unwrap_or_else(|e| common::usage_exit("xchannel", IMPL, &e, &u));
    if o.place == Place::Root {
        let e = common::UsageError(
            "--in root: with monoio's `sync` feature block_on spawns its root future as a task".into(),
        );
        common::usage_exit("xchannel", IMPL, &e, &u);
    }
    // The body runs in a task (--in root is refused above).
    common::xchannel_bench::<Monoio, _, _, _, _, _>(
        o,
        "futures::channel::mpsc (two monoio runtimes on two threads)",
        // futures' bounded channel holds `buffer + number of senders` messages.
        |capacity| futures::channel::mpsc::channel::<u64>((capacity - 1) as usize),
        |rt, _, mut tx, messages| rt.block_on(async move { monoio::spawn(common::produce!(tx, messages)).await }),
        |rt, _, mut rx| rt.block_on(async move { monoio::spawn(common::consume!(rx.next())).await }),
    )
}
