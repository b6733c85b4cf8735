//! Compio baseline of the ringo benchmark suite. One single-threaded compio runtime;
//! built with only the `io-uring` driver feature (no `polling` fallback), and the
//! driver type is checked at start. See ../README.md for the subcommands and the
//! JSON line.

use std::mem::MaybeUninit;
use std::rc::Rc;

use common::Runtime as _;
use common::{
    bump, AlignedBuf, Args, ChannelOpts, ChannelOut, IoState, Meter, PairJoins, Place, Received, SpawnOpts, SpawnOut,
    UsageError, YieldOpts, YieldOut, ECHO,
};
use compio::buf::{BufResult, IoBuf, IoBufMut, SetLen};
use compio::io::{AsyncRead, AsyncReadAt, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use compio::runtime::Runtime;
use futures::{SinkExt, StreamExt};
use ringo_bench_common as common;

const IMPL: &str = "compio";
/// Submission queue entries (compio's own default, stated explicitly).
const ENTRIES: u32 = 1024;
const DRIVER: &str = "io_uring (compio proactor, 1024 entries)";

struct Compio;

fn main() {
    common::main::<Compio>()
}

impl common::Runtime for Compio {
    const IMPL: &'static str = IMPL;
    const DRIVER: &'static str = DRIVER;
    type Rt = Runtime;

    fn block_on<F: std::future::Future>(rt: &mut Runtime, f: F) -> F::Output {
        rt.block_on(f)
    }

    fn build(bench: &str, variant: &str) -> Runtime {
        let die = |m: String| -> ! { Self::fail(bench, variant, m) };
        let mut proactor = compio::driver::ProactorBuilder::new();
        proactor.capacity(ENTRIES);
        let rt = compio::runtime::RuntimeBuilder::new()
            .with_proactor(proactor)
            .build()
            .unwrap_or_else(|e| die(format!("cannot build the compio runtime: {e}")));
        if !rt.driver_type().is_iouring() {
            die(format!("compio picked the {:?} driver, not io_uring", rt.driver_type()));
        }
        rt
    }
}

// ---------------------------------------------------------------- buffers

/// Page-aligned reusable read buffer handed to the kernel by ownership.
struct Buf(AlignedBuf);

impl IoBuf for Buf {
    fn as_init(&self) -> &[u8] {
        self.0.valid()
    }
}

impl SetLen for Buf {
    unsafe fn set_len(&mut self, len: usize) {
        self.0.len = len.min(self.0.capacity());
    }
}

impl IoBufMut for Buf {
    fn as_uninit(&mut self) -> &mut [MaybeUninit<u8>] {
        let full = self.0.full_mut();
        // SAFETY: u8 and MaybeUninit<u8> have the same layout; the bytes are initialised.
        unsafe { std::slice::from_raw_parts_mut(full.as_mut_ptr() as *mut MaybeUninit<u8>, full.len()) }
    }
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, DRIVER, usage);
    let variant = p.opts.variant();
    let bench = p.bench;
    // The std handle served the checks; compio opens its own (same flags).
    drop(p.file);
    let rt = Compio::build(bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup, direct) = (
        p.opts.qd,
        p.opts.bs as usize,
        p.opts.seconds,
        p.opts.warmup,
        p.opts.direct,
    );
    let path = p.opts.file.clone();
    let st = state.clone();
    let m = rt.block_on(async move {
        let mut oo = compio::fs::OpenOptions::new();
        oo.read(true);
        if direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        let file = oo.open(&path).await.unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &common::open_error(&path, direct, &e),
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
async fn run_readers(file: &Rc<compio::fs::File>, st: &Rc<IoState>, bufs: Vec<Buf>, seconds: f64) -> Vec<Buf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| compio::runtime::spawn(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(b) => back.push(b),
            Err(e) => st.error(format!("reader task failed: {e:?}")),
        }
    }
    back
}

/// One of the `qd` tasks: read the next block until the phase is over.
async fn reader(file: Rc<compio::fs::File>, st: Rc<IoState>, mut buf: Buf) -> Buf {
    while let Some(off) = st.next_offset() {
        let BufResult(res, b) = file.read_at(buf, off).await;
        buf = b;
        st.complete(off, res);
    }
    buf
}

// ---------------------------------------------------------------- echo-server

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf: Vec<u8> = Vec::with_capacity(cap);
    loop {
        // compio reads into the whole capacity from the start and only ever grows
        // the length, so reset it before each read.
        buf.clear();
        let BufResult(res, b) = s.read(buf).await;
        buf = b;
        match res {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                let BufResult(res, b) = s.write_all(buf).await;
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

/// Run a micro benchmark body in a spawned task or in the root future. A failed
/// join of the body task is reported as an error string.
fn run_micro<F, Fut, T>(rt: &Runtime, place: Place, body: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + 'static,
    Fut: std::future::Future<Output = T> + 'static,
    T: 'static,
{
    match place {
        Place::Task => rt.block_on(async move { compio::runtime::spawn(body()).await.map_err(|e| format!("{e:?}")) }),
        Place::Root => Ok(rt.block_on(body())),
    }
}

/// A join handle's output: `Err` for a task that failed.
type Joined<T> = Result<T, compio::runtime::JoinError>;

impl common::Baseline for Compio {
    const BIN: &'static str = "ringo-bench-compio";
    const FS_NOTE: &'static str =
        "compio::fs::File::read_at (AsyncReadAt) on the io_uring proactor, one 4096-aligned buffer per task";
    const YIELD_NOTE: &'static str = "compio has no yield of its own; futures_lite::future::yield_now is used";
    const YIELD_FN: &'static str = "futures_lite::future::yield_now (compio has no yield of its own)";

    fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
        file_bench(a, random, usage)
    }

    fn echo_server(a: &Args, usage: &str) -> ! {
        common::echo_server::<Self, _, _>(
            a,
            usage,
            async |port| TcpListener::bind(("127.0.0.1", port)).await,
            TcpListener::local_addr,
            async |l| l.accept().await,
            |stream: TcpStream, bufsize| {
                let _ = stream.set_nodelay(true);
                compio::runtime::spawn(serve(stream, bufsize)).detach();
            },
        )
    }

    fn spawn(rt: &mut Runtime, o: &SpawnOpts) -> Result<SpawnOut, String> {
        let (count, batch) = (o.count, o.batch);
        run_micro(rt, o.place, move || {
            common::spawn_join(count, batch, || compio::runtime::spawn(async {}), |r| r.is_ok())
        })
    }

    fn yield_now(rt: &mut Runtime, o: &YieldOpts) -> Result<YieldOut, String> {
        let count = o.count;
        run_micro(rt, o.place, move || {
            common::yield_loop(count, futures_lite::future::yield_now)
        })
    }

    fn channel_name(local_sync: bool) -> Result<&'static str, UsageError> {
        Ok(if local_sync {
            "local_sync::mpsc::bounded"
        } else {
            "futures::channel::mpsc"
        })
    }

    fn channel(rt: &mut Runtime, o: &ChannelOpts) -> Result<ChannelOut, String> {
        let (messages, pairs, capacity) = (o.messages, o.pairs, o.capacity);
        // How the channel body reads its handles.
        let joins = || PairJoins {
            producer_ok: |r: Joined<bool>| matches!(r, Ok(true)),
            consumer_got: |r: Joined<Received>| r.map_err(|e| format!("consumer task failed: {e:?}")),
            producer_failed: "a producer failed",
        };
        // futures' bounded channel holds `buffer + number of senders` messages.
        let buffer = (capacity - 1) as usize;
        if o.local_sync {
            let spawn_pair = move || {
                let make = local_sync::mpsc::bounded::channel::<u64>(capacity as usize);
                common::spawn_pair!(compio::runtime::spawn, make, recv, messages)
            };
            run_micro(rt, o.place, move || {
                common::channel_pairs(pairs, messages, spawn_pair, joins())
            })
        } else {
            let spawn_pair = move || {
                let make = futures::channel::mpsc::channel::<u64>(buffer);
                common::spawn_pair!(compio::runtime::spawn, make, next, messages)
            };
            run_micro(rt, o.place, move || {
                common::channel_pairs(pairs, messages, spawn_pair, joins())
            })
        }
    }

    /// Cross-thread channel: a compio runtime on each of two threads (pinned to two CPUs),
    /// the producer's task sends 0..M through one bounded futures::channel::mpsc channel
    /// holding `capacity` messages to the consumer's task; compio's executor takes wake-ups
    /// from other threads (they wake its proactor).
    fn xchannel(a: &Args, usage: &str) -> ! {
        let o = common::xchannel_opts(a).unwrap_or_else(|e| common::usage_exit("xchannel", IMPL, &e, usage));
        common::xchannel_bench::<Self, _, _, _, _, _>(
            o,
            "futures::channel::mpsc (two compio runtimes on two threads)",
            // futures' bounded channel holds `buffer + number of senders` messages.
            |capacity| futures::channel::mpsc::channel::<u64>((capacity - 1) as usize),
            |rt, place, mut tx, messages| run_micro(rt, place, move || common::produce!(tx, messages)).unwrap_or(false),
            |rt, place, mut rx| run_micro(rt, place, move || common::consume!(rx.next())).unwrap_or_default(),
        )
    }
}
