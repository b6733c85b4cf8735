//! The frame every baseline program shares: the subcommand dispatch, each micro benchmark
//! from its options to its JSON line, and the measured bodies of the micro benchmarks,
//! written once and instantiated by each runtime with its own spawn, yield and channels.
//!
//! A program is a marker type implementing [`Baseline`] (and [`Runtime`]); its `main` is
//! [`main`]. What stays in the program is only what differs between runtimes: how the
//! runtime is built, the file and echo-server benchmarks (their I/O types differ), and how
//! a micro benchmark body is started (spawned as a task or given to `block_on`; tokio's
//! spawn needs `Send` futures, the others' do not, so that call stays where the types are
//! known).

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use crate::{
    bind_should_retry, block_term_signals, bump, channel_opts, echo_io_error, echo_opts, echo_signal_reporter,
    expected_sum, fail, finish_micro, parse_cli, run_xchannel, spawn_opts, unknown_subcommand, usage_exit, usage_text,
    yield_opts, Args, ChannelOpts, Measured, Meter, Place, Received, Report, SpawnOpts, UsageError, XChannelOpts,
    YieldOpts, ECHO, EXIT_FAILED,
};

/// A runtime as the micro benchmarks see it: its name, its driver and how to build it.
pub trait Runtime: 'static {
    /// The `impl` field.
    const IMPL: &'static str;
    /// The `driver` field of the echo server and the micro benchmarks.
    const DRIVER: &'static str;
    type Rt;
    /// Build one runtime, or print a failure line for `bench` and exit.
    fn build(bench: &str, variant: &str) -> Self::Rt;
    /// Run `f` to completion on the runtime (as the root future).
    fn block_on<F: Future>(rt: &mut Self::Rt, f: F) -> F::Output;

    /// Print a failure line (`ok:false`, `error` = `msg`) for `bench` and exit.
    fn fail(bench: &str, variant: &str, msg: String) -> ! {
        fail(bench, Self::IMPL, variant, EXIT_FAILED, &msg)
    }
}

/// One baseline program: a [`Runtime`] plus what its subcommands do on it.
pub trait Baseline: Runtime {
    /// The binary's name, the usage text's notes on file I/O and on yield.
    const BIN: &'static str;
    const FS_NOTE: &'static str;
    const YIELD_NOTE: &'static str;
    /// The `yield_fn` field.
    const YIELD_FN: &'static str;

    /// `seqread` (`random` false) and `randread`.
    fn file_bench(a: &Args, random: bool, usage: &str) -> !;
    /// `echo-server` ([`echo_server`]).
    fn echo_server(a: &Args, usage: &str) -> !;
    /// The `spawn` body ([`spawn_join`]) in a task or the root future; `Err` when the body
    /// task failed.
    fn spawn(rt: &mut Self::Rt, o: &SpawnOpts) -> Result<SpawnOut, String>;
    /// The `yield` body ([`yield_loop`]).
    fn yield_now(rt: &mut Self::Rt, o: &YieldOpts) -> Result<YieldOut, String>;
    /// The `channel` field for the channel `--channel` chose, or a usage error when the
    /// runtime does not offer it.
    fn channel_name(local_sync: bool) -> Result<&'static str, UsageError>;
    /// The `channel` body ([`channel_pairs`]).
    fn channel(rt: &mut Self::Rt, o: &ChannelOpts) -> Result<ChannelOut, String>;
    /// `xchannel` ([`xchannel_bench`]); an unknown subcommand unless the program has it.
    fn xchannel(a: &Args, usage: &str) -> ! {
        unknown_subcommand(a, Self::IMPL, usage)
    }
}

/// The `main` of a baseline program: parse the command line, run the subcommand, print its
/// JSON line and exit.
pub fn main<B: Baseline>() -> ! {
    let u = usage_text(B::BIN, B::FS_NOTE, B::YIELD_NOTE);
    let a = parse_cli(B::IMPL, &u);
    crate::install_panic_report(&a.cmd, B::IMPL);
    match a.cmd.as_str() {
        "seqread" => B::file_bench(&a, false, &u),
        "randread" => B::file_bench(&a, true, &u),
        "echo-server" => B::echo_server(&a, &u),
        "spawn" => spawn_bench::<B>(&a, &u),
        "yield" => yield_bench::<B>(&a, &u),
        "channel" => channel_bench::<B>(&a, &u),
        "xchannel" => B::xchannel(&a, &u),
        _ => unknown_subcommand(&a, B::IMPL, &u),
    }
}

/// What the `spawn` body returns: the measured interval, the tasks joined and the failed
/// joins. The bodies return plain tuples, the types the programs' bodies returned before:
/// the output type of a body task decides, among other things, whether the runtime's
/// join-handle poll is inlined into the root future (compio, `yield --in task`: 29
/// instructions more per yield with a struct holding the same fields).
pub type SpawnOut = (Measured, u64, u64);
/// What the `yield` body returns: the measured interval and the yields done.
pub type YieldOut = (Measured, u64);
/// What the `channel` body returns: the measured interval, the messages received, the
/// errors counted and the first error's message.
pub type ChannelOut = (Measured, u64, u64, Option<String>);

/// The fields every micro benchmark's line starts with.
pub fn micro_report<R: Runtime>(bench: &str, place: Place) -> Report {
    let mut r = Report::new(bench, R::IMPL, "plain");
    r.str("driver", R::DRIVER).str("in", place.name());
    r
}

fn body_failed<R: Runtime>(bench: &str, e: String) -> ! {
    R::fail(bench, "plain", format!("benchmark task failed: {e}"))
}

fn spawn_bench<B: Baseline>(a: &Args, usage: &str) -> ! {
    let o = spawn_opts(a).unwrap_or_else(|e| usage_exit("spawn", B::IMPL, &e, usage));
    let mut rt = B::build("spawn", "plain");
    // The rounds before the last run untimed: the timed one finds the memory its tasks need
    // already touched, as in a long-running program.
    for _ in 1..o.rounds {
        let (_, done, _) = B::spawn(&mut rt, &o).unwrap_or_else(|e| body_failed::<B>("spawn", e));
        if done != o.count {
            body_failed::<B>("spawn", format!("an untimed round joined {done} of {} tasks", o.count));
        }
    }
    let (m, done, errors) = B::spawn(&mut rt, &o).unwrap_or_else(|e| body_failed::<B>("spawn", e));
    let mut r = micro_report::<B>("spawn", o.place);
    r.int("count", o.count).int("batch", o.batch).int("rounds", o.rounds);
    finish_micro(r, &m, done, o.count, errors, None)
}

fn yield_bench<B: Baseline>(a: &Args, usage: &str) -> ! {
    let o = yield_opts(a).unwrap_or_else(|e| usage_exit("yield", B::IMPL, &e, usage));
    let mut rt = B::build("yield", "plain");
    let (m, done) = B::yield_now(&mut rt, &o).unwrap_or_else(|e| body_failed::<B>("yield", e));
    let mut r = micro_report::<B>("yield", o.place);
    r.str("yield_fn", B::YIELD_FN).int("count", o.count);
    finish_micro(r, &m, done, o.count, 0, None)
}

fn channel_bench<B: Baseline>(a: &Args, usage: &str) -> ! {
    let o = channel_opts(a).unwrap_or_else(|e| usage_exit("channel", B::IMPL, &e, usage));
    let name = B::channel_name(o.local_sync).unwrap_or_else(|e| usage_exit("channel", B::IMPL, &e, usage));
    let mut rt = B::build("channel", "plain");
    let (m, received, errors, first_error) = B::channel(&mut rt, &o).unwrap_or_else(|e| body_failed::<B>("channel", e));
    let mut r = micro_report::<B>("channel", o.place);
    r.str("channel", name)
        .int("messages", o.messages)
        .int("pairs", o.pairs)
        .int("capacity", o.capacity);
    finish_micro(r, &m, received, o.messages * o.pairs, errors, first_error)
}

// The bodies are functions returning an `async move` block, not `async fn`s: the block is
// what the programs wrote before, and an `async fn` (which first moves its arguments into
// its frame) polled a few instructions longer per yield (tokio, `yield --in root`).

/// The `spawn` body: spawn `count` empty tasks with `spawn`, joining their handles every
/// `batch` spawns; `joined` tells a handle's output of a finished task from a failed join.
#[allow(clippy::manual_async_fn)] // see above
pub fn spawn_join<H, S, J>(count: u64, batch: u64, mut spawn: S, joined: J) -> impl Future<Output = SpawnOut>
where
    H: Future,
    S: FnMut() -> H,
    J: Fn(H::Output) -> bool,
{
    async move {
        let meter = Meter::start();
        let mut handles = Vec::with_capacity(batch as usize);
        let (mut left, mut done) = (count, 0u64);
        while left > 0 {
            let k = left.min(batch);
            for _ in 0..k {
                handles.push(spawn());
            }
            for h in handles.drain(..) {
                // Await first: in `joined(h.await)` the borrow of `joined` would live across
                // the await, one more store per join.
                let out = h.await;
                if joined(out) {
                    done += 1;
                }
            }
            left -= k;
        }
        // Every handle was joined: the failed joins are the rest. (Counting them in the
        // loop, LLVM picked the counter to bump with a select, 3 instructions more per
        // join with tokio.)
        (meter.stop(), done, count - done)
    }
}

/// The `yield` body: await `yield_now()` `count` times.
#[allow(clippy::manual_async_fn)]
pub fn yield_loop<Y, F>(count: u64, yield_now: F) -> impl Future<Output = YieldOut>
where
    Y: Future<Output = ()>,
    F: Fn() -> Y,
{
    async move {
        let meter = Meter::start();
        let mut done = 0u64;
        for _ in 0..count {
            yield_now().await;
            // Opaque to the optimiser: without it LLVM can fold the whole loop when the root
            // future is polled inline (`--in root`).
            done = std::hint::black_box(done + 1);
        }
        (meter.stop(), done)
    }
}

/// How the `channel` body reads the join handles of its tasks: whether a producer's handle
/// says every send succeeded, what a consumer's handle says it received (`Err` with the
/// message of a failed join), and the message of a failed producer.
pub struct PairJoins<P, C> {
    pub producer_ok: P,
    pub consumer_got: C,
    pub producer_failed: &'static str,
}

/// The `channel` body: `pairs` producer/consumer pairs, each spawned by `spawn_pair` over
/// its own channel ([`spawn_pair!`]), then every producer and consumer joined and each
/// consumer's count and sum of `messages` messages checked.
#[allow(clippy::manual_async_fn)]
pub fn channel_pairs<HP, HC, S, P, C>(
    pairs: u64,
    messages: u64,
    mut spawn_pair: S,
    j: PairJoins<P, C>,
) -> impl Future<Output = ChannelOut>
where
    HP: Future,
    HC: Future,
    S: FnMut() -> (HP, HC),
    P: Fn(HP::Output) -> bool,
    C: Fn(HC::Output) -> Result<Received, String>,
{
    async move {
        let meter = Meter::start();
        let mut producers = Vec::with_capacity(pairs as usize);
        let mut consumers = Vec::with_capacity(pairs as usize);
        for _ in 0..pairs {
            let (p, c) = spawn_pair();
            producers.push(p);
            consumers.push(c);
        }
        let (mut received, mut errors, mut first_error) = (0u64, 0u64, None);
        for p in producers {
            let out = p.await;
            if !(j.producer_ok)(out) {
                errors += 1;
                first_error.get_or_insert_with(|| j.producer_failed.to_string());
            }
        }
        for c in consumers {
            let out = c.await;
            match (j.consumer_got)(out) {
                Ok(got) => {
                    received += got.count;
                    if got.count != messages || got.sum != expected_sum(messages) {
                        errors += 1;
                        first_error.get_or_insert_with(|| {
                            format!("consumer got {} messages summing to {}", got.count, got.sum)
                        });
                    }
                }
                Err(e) => {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
            }
        }
        (meter.stop(), received, errors, first_error)
    }
}

/// `xchannel` on runtime `R`: `channel(capacity)` makes the channel; `produce(rt, place, tx,
/// messages)` and `consume(rt, place, rx)` run the producer's and the consumer's side on
/// their own threads' runtimes (built by the frame, outside the measured interval; the body
/// is [`produce!`] / [`consume!`]). See [`run_xchannel`].
pub fn xchannel_bench<R, Tx, Rx, M, P, C>(o: XChannelOpts, name: &str, channel: M, produce: P, consume: C) -> !
where
    R: Runtime,
    Tx: Send + 'static,
    Rx: Send + 'static,
    M: FnOnce(u64) -> (Tx, Rx),
    P: FnOnce(&mut R::Rt, Place, Tx, u64) -> bool + Send + 'static,
    C: FnOnce(&mut R::Rt, Place, Rx) -> Received + Send + 'static,
{
    let (messages, place) = (o.messages, o.place);
    let (tx, rx) = channel(o.capacity);
    let mut r = micro_report::<R>("xchannel", place);
    r.str("channel", name).int("capacity", o.capacity);
    run_xchannel(
        r,
        messages,
        move |start| {
            let mut rt = R::build("xchannel", "plain");
            start();
            produce(&mut rt, place, tx, messages)
        },
        move |start| {
            let mut rt = R::build("xchannel", "plain");
            start();
            consume(&mut rt, place, rx)
        },
    )
}

/// The producer of the channel benchmarks, an `async move` block: send `0..$messages` on
/// `$tx`; `false` as soon as a send fails (the receiver is gone). A macro, so one text
/// serves every channel: their `send` methods are spelled alike but are not one trait's
/// (futures' takes `&mut self` through `SinkExt`, which the caller imports).
#[macro_export]
macro_rules! produce {
    ($tx:ident, $messages:expr) => {
        async move {
            for i in 0..$messages {
                if $tx.send(i).await.is_err() {
                    return false;
                }
            }
            true
        }
    };
}

/// The consumer of the channel benchmarks, an `async move` block: receive with
/// `$rx.$recv()` until the channel closes; the count and the (wrapping) sum received.
#[macro_export]
macro_rules! consume {
    ($rx:ident . $recv:ident ()) => {
        async move {
            let mut got = $crate::Received::default();
            while let Some(v) = $rx.$recv().await {
                got.count += 1;
                got.sum = got.sum.wrapping_add(v);
            }
            got
        }
    };
}

/// One pair of the `channel` benchmark: make a channel with `$make`, spawn (with `$spawn`)
/// its producer ([`produce!`] of `$messages`) and then its consumer ([`consume!`] with
/// `$recv`); the two join handles.
#[macro_export]
macro_rules! spawn_pair {
    ($spawn:path, $make:expr, $recv:ident, $messages:expr) => {{
        #[allow(unused_mut)]
        let (mut tx, mut rx) = $make;
        (
            $spawn($crate::produce!(tx, $messages)),
            $spawn($crate::consume!(rx.$recv())),
        )
    }};
}

/// `echo-server` on baseline `B`: a listener on 127.0.0.1:`--port` made by `bind(port)` (an
/// address in use is retried for a while, see [`bind_should_retry`]), the signal thread that
/// prints the line at SIGTERM/SIGINT, then every connection `accept(&listener)` takes is
/// counted and handed to `serve(stream, buf)`, which sets its options and spawns the task
/// that echoes it; a failed accept is counted.
pub fn echo_server<B, L, S>(
    a: &Args,
    usage: &str,
    bind: impl AsyncFn(u16) -> io::Result<L>,
    local_addr: impl Fn(&L) -> io::Result<SocketAddr>,
    accept: impl AsyncFn(&L) -> io::Result<(S, SocketAddr)>,
    serve: impl Fn(S, usize),
) -> !
where
    B: Baseline,
{
    let (port, bufsize) = echo_opts(a).unwrap_or_else(|e| usage_exit("echo-server", B::IMPL, &e, usage));
    let die = |m: String| -> ! { B::fail("echo-server", "plain", m) };
    block_term_signals().unwrap_or_else(|e| die(format!("cannot block signals: {e}")));
    let mut rt = B::build("echo-server", "plain");
    B::block_on(&mut rt, async move {
        let first_try = std::time::Instant::now();
        let listener = loop {
            match bind(port).await {
                Ok(l) => break l,
                Err(e) if bind_should_retry(&e, first_try) => continue,
                Err(e) => die(format!("bind 127.0.0.1:{port}: {e}")),
            }
        };
        let local = local_addr(&listener).unwrap_or_else(|e| die(format!("local_addr: {e}")));
        let mut base = Report::new("echo-server", B::IMPL, "plain");
        base.str("driver", B::DRIVER)
            .int("port", local.port() as u64)
            .int("buf", bufsize as u64);
        echo_signal_reporter(base, Meter::start()).unwrap_or_else(|e| die(format!("signal thread: {e}")));
        eprintln!("{} echo-server listening on {local}", B::BIN);
        loop {
            match accept(&listener).await {
                Ok((stream, _)) => {
                    bump(&ECHO.connections, 1);
                    serve(stream, bufsize);
                }
                Err(e) => echo_io_error(&e),
            }
        }
    })
}
