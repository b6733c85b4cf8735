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

use common::{Place, Report};
use futures::{SinkExt, StreamExt};
use monoio::IoUringDriver;
use ringo_bench_common as common;

const IMPL: &str = "monoio";
const ENTRIES: u32 = 1024;
const DRIVER: &str = "io_uring (monoio IoUringDriver, 1024 entries, `sync` feature)";

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

fn runtime() -> monoio::Runtime<IoUringDriver> {
    monoio::RuntimeBuilder::<IoUringDriver>::new()
        .with_entries(ENTRIES)
        .build()
        .unwrap_or_else(|e| {
            common::fail(
                "xchannel",
                IMPL,
                "plain",
                common::EXIT_FAILED,
                &format!("cannot build the monoio io_uring runtime: {e}"),
            )
        })
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
    let (messages, capacity) = (o.messages, o.capacity);
    // futures' bounded channel holds `buffer + number of senders` messages.
    let (mut tx, mut rx) = futures::channel::mpsc::channel::<u64>((capacity - 1) as usize);
    let mut r = Report::new("xchannel", IMPL, "plain");
    r.str("driver", DRIVER)
        .str("in", Place::Task.name())
        .str("channel", "futures::channel::mpsc (two monoio runtimes on two threads)")
        .int("capacity", capacity);
    common::run_xchannel(
        r,
        messages,
        move |start| {
            let mut rt = runtime();
            start();
            rt.block_on(async move {
                monoio::spawn(async move {
                    for i in 0..messages {
                        if tx.send(i).await.is_err() {
                            return false;
                        }
                    }
                    true
                })
                .await
            })
        },
        move |start| {
            let mut rt = runtime();
            start();
            rt.block_on(async move {
                monoio::spawn(async move {
                    let mut got = common::Received::default();
                    while let Some(v) = rx.next().await {
                        got.count += 1;
                        got.sum = got.sum.wrapping_add(v);
                    }
                    got
                })
                .await
            })
        },
    )
}
