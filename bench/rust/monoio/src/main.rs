//! Monoio baseline of the ringo benchmark suite. One single-threaded runtime on the
//! io_uring driver (`IoUringDriver`, chosen explicitly, never the epoll fallback).
//! See ../README.md for the subcommands and the JSON line.

use std::rc::Rc;

use common::Runtime as _;
use common::{
    bump, AlignedBuf, Args, ChannelOpts, ChannelOut, IoState, Meter, PairJoins, Place, SpawnOpts, SpawnOut, UsageError,
    YieldOpts, YieldOut, ECHO,
};
use futures::{SinkExt, StreamExt};
use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::IoUringDriver;
use ringo_bench_common as common;

mod rt;

use rt::Monoio;

const IMPL: &str = Monoio::IMPL;
const DRIVER: &str = Monoio::DRIVER;

fn main() {
    common::main::<Monoio>()
}

// ---------------------------------------------------------------- buffers

/// Page-aligned reusable read buffer handed to the kernel by ownership.
struct Buf(AlignedBuf);

// SAFETY: the pointer stays valid and fixed while the value lives (heap allocation that
// is never reallocated); `bytes_init` never exceeds the allocation.
unsafe impl IoBuf for Buf {
    fn read_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len
    }
}

// SAFETY: as above; `bytes_total` is the allocation size.
unsafe impl IoBufMut for Buf {
    fn write_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.0.capacity()
    }
    unsafe fn set_init(&mut self, pos: usize) {
        self.0.len = pos.min(self.0.capacity());
    }
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, DRIVER, usage);
    let variant = p.opts.variant();
    let mut rt = Monoio::build(p.bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup) = (p.opts.qd, p.opts.bs as usize, p.opts.seconds, p.opts.warmup);
    let (bench, std_file) = (p.bench, p.file);
    let st = state.clone();
    let m = rt.block_on(async move {
        let file = monoio::fs::File::from_std(std_file).unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &format!("monoio File::from_std: {e}"),
            )
        });
        let file = Rc::new(file);
        let mut bufs: Vec<Buf> = (0..qd).map(|_| Buf(AlignedBuf::new(bs))).collect();
        if warmup > 0.0 {
            bufs = run_readers(&file, &st, bufs, warmup).await;
            st.begin_measurement();
        }
        let meter = Meter::start();
        run_readers(&file, &st, bufs, seconds).await;
        meter.stop()
    });
    state.finish(p.report, &m, &p.opts.file, p.size)
}

/// Run one task per buffer until `seconds` have passed (or an error); give the
/// buffers back for the next phase.
async fn run_readers(file: &Rc<monoio::fs::File>, st: &Rc<IoState>, bufs: Vec<Buf>, seconds: f64) -> Vec<Buf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| monoio::spawn(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        back.push(t.await);
    }
    back
}

/// One of the `qd` tasks: read the next block until the phase is over.
async fn reader(file: Rc<monoio::fs::File>, st: Rc<IoState>, mut buf: Buf) -> Buf {
    while let Some(off) = st.next_offset() {
        let (res, b) = file.read_at(buf, off).await;
        buf = b;
        st.complete(off, res);
    }
    buf
}

// ---------------------------------------------------------------- echo-server

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf: Vec<u8> = Vec::with_capacity(cap);
    loop {
        buf.clear();
        let (res, b) = s.read(buf).await;
        buf = b;
        match res {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                let (res, b) = s.write_all(buf).await;
                buf = b;
                if let Err(e) = res {
                    common::echo_io_error(&e);
                    return;
                }
            }
            Err(e) => {
                common::echo_io_error(&e);
                return;
            }
        }
    }
}

// ---------------------------------------------------------------- micro benchmarks

/// Run a micro benchmark body in a spawned task or in the root future.
fn run_micro<F, Fut>(rt: &mut monoio::Runtime<IoUringDriver>, place: Place, body: F) -> Fut::Output
where
    F: FnOnce() -> Fut + 'static,
    Fut: std::future::Future + 'static,
{
    match place {
        Place::Task => rt.block_on(async move { monoio::spawn(body()).await }),
        Place::Root => rt.block_on(body()),
    }
}

impl common::Baseline for Monoio {
    const BIN: &'static str = "ringo-bench-monoio";
    const FS_NOTE: &'static str = "monoio::fs::File::read_at on the io_uring driver, one 4096-aligned buffer per task";
    const YIELD_NOTE: &'static str = "futures_lite::future::yield_now";
    const YIELD_FN: &'static str = "futures_lite::future::yield_now";

    fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
        file_bench(a, random, usage)
    }

    fn echo_server(a: &Args, usage: &str) -> ! {
        common::echo_server::<Self, _, _>(
            a,
            usage,
            async |port| TcpListener::bind(("127.0.0.1", port)),
            TcpListener::local_addr,
            async |l| l.accept().await,
            |stream: TcpStream, bufsize| {
                let _ = stream.set_nodelay(true);
                drop(monoio::spawn(serve(stream, bufsize)));
            },
        )
    }

    fn spawn(rt: &mut Self::Rt, o: &SpawnOpts) -> Result<SpawnOut, String> {
        let (count, batch) = (o.count, o.batch);
        Ok(run_micro(rt, o.place, move || {
            common::spawn_join(count, batch, || monoio::spawn(async {}), |()| true)
        }))
    }

    fn yield_now(rt: &mut Self::Rt, o: &YieldOpts) -> Result<YieldOut, String> {
        let count = o.count;
        Ok(run_micro(rt, o.place, move || {
            common::yield_loop(count, futures_lite::future::yield_now)
        }))
    }

    fn channel_name(local_sync: bool) -> Result<&'static str, UsageError> {
        Ok(if local_sync {
            "local_sync::mpsc::bounded"
        } else {
            "futures::channel::mpsc"
        })
    }

    fn channel(rt: &mut Self::Rt, o: &ChannelOpts) -> Result<ChannelOut, String> {
        let (messages, pairs, capacity) = (o.messages, o.pairs, o.capacity);
        // How the channel body reads its handles (a monoio join cannot fail).
        let joins = || PairJoins {
            producer_ok: |ok| ok,
            consumer_got: Ok,
            producer_failed: "a send failed: receiver dropped",
        };
        // futures' bounded channel holds `buffer + number of senders` messages.
        let buffer = (capacity - 1) as usize;
        Ok(if o.local_sync {
            let spawn_pair = move || {
                let make = local_sync::mpsc::bounded::channel::<u64>(capacity as usize);
                common::spawn_pair!(monoio::spawn, make, recv, messages)
            };
            run_micro(rt, o.place, move || {
                common::channel_pairs(pairs, messages, spawn_pair, joins())
            })
        } else {
            let spawn_pair = move || {
                let make = futures::channel::mpsc::channel::<u64>(buffer);
                common::spawn_pair!(monoio::spawn, make, next, messages)
            };
            run_micro(rt, o.place, move || {
                common::channel_pairs(pairs, messages, spawn_pair, joins())
            })
        })
    }
}
