//! Tokio baseline of the ringo benchmark suite. One current_thread runtime (epoll
//! reactor). Tokio has no io_uring file I/O: its `fs` runs blocking std calls on the
//! blocking thread pool, so `seqread`/`randread` do exactly that (spawn_blocking +
//! pread into an aligned buffer) and say so in the `driver` field.
//! See ../README.md for the subcommands and the JSON line.

use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;

use common::Runtime as _;
use common::{
    bump, AlignedBuf, Args, ChannelOpts, ChannelOut, IoState, Meter, PairJoins, Place, Received, SpawnOpts, SpawnOut,
    UsageError, YieldOpts, YieldOut, ECHO,
};
use ringo_bench_common as common;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const IMPL: &str = "tokio";
const DRIVER: &str = "epoll (tokio current_thread)";
const FS_DRIVER: &str = "blocking pool (tokio spawn_blocking + pread; tokio has no io_uring fs)";

struct Tokio;

fn main() {
    common::main::<Tokio>()
}

impl common::Runtime for Tokio {
    const IMPL: &'static str = IMPL;
    const DRIVER: &'static str = DRIVER;
    type Rt = Runtime;

    fn block_on<F: std::future::Future>(rt: &mut Runtime, f: F) -> F::Output {
        rt.block_on(f)
    }

    fn build(bench: &str, variant: &str) -> Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap_or_else(|e| Self::fail(bench, variant, format!("cannot build the tokio runtime: {e}")))
    }
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, FS_DRIVER, usage);
    let variant = p.opts.variant();
    let rt = Tokio::build(p.bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup) = (p.opts.qd, p.opts.bs as usize, p.opts.seconds, p.opts.warmup);
    let file = Arc::new(p.file);
    let st = state.clone();
    let local = tokio::task::LocalSet::new();
    let m = local.block_on(&rt, async move {
        let mut bufs: Vec<AlignedBuf> = (0..qd).map(|_| AlignedBuf::new(bs)).collect();
        start_blocking_threads(qd).await;
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

/// Tokio's default cap on blocking threads.
const MAX_BLOCKING_THREADS: u64 = 512;

/// Make the blocking pool start `qd` threads now (all blocked together on a barrier),
/// so thread creation is not inside the measured interval.
async fn start_blocking_threads(qd: u64) {
    let n = qd.min(MAX_BLOCKING_THREADS) as usize;
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let b = barrier.clone();
            tokio::task::spawn_blocking(move || {
                b.wait();
            })
        })
        .collect();
    for h in hs {
        let _ = h.await;
    }
}

/// Run one task per buffer until `seconds` have passed (or an error); give the
/// buffers back for the next phase.
async fn run_readers(
    file: &Arc<std::fs::File>,
    st: &Rc<IoState>,
    bufs: Vec<AlignedBuf>,
    seconds: f64,
) -> Vec<AlignedBuf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| tokio::task::spawn_local(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(Some(b)) => back.push(b),
            Ok(None) => {}
            Err(e) => st.error(format!("reader task failed: {e}")),
        }
    }
    back
}

/// One of the `qd` tasks: read the next block on the blocking pool until the phase is
/// over. `None` when the buffer was lost with a failed blocking task.
async fn reader(file: Arc<std::fs::File>, st: Rc<IoState>, mut buf: AlignedBuf) -> Option<AlignedBuf> {
    while let Some(off) = st.next_offset() {
        let f = file.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let res = f.read_at(buf.full_mut(), off);
            (res, buf)
        })
        .await;
        match joined {
            Ok((res, b)) => {
                buf = b;
                st.complete(off, res);
            }
            Err(e) => {
                st.error(format!("blocking read task failed: {e}"));
                return None;
            }
        }
    }
    Some(buf)
}

// ---------------------------------------------------------------- echo-server

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf = vec![0u8; cap];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                if let Err(e) = s.write_all(&buf[..n]).await {
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
fn run_micro<F, Fut, T>(rt: &Runtime, place: Place, body: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    match place {
        Place::Task => rt.block_on(async move { tokio::spawn(body()).await.map_err(|e| e.to_string()) }),
        Place::Root => Ok(rt.block_on(body())),
    }
}

/// A join handle's output: `Err` for a task that failed.
type Joined<T> = Result<T, tokio::task::JoinError>;

impl common::Baseline for Tokio {
    const BIN: &'static str = "ringo-bench-tokio";
    const FS_NOTE: &'static str = "tokio's blocking thread pool: spawn_blocking + pread into a 4096-aligned buffer per task (what tokio::fs does inside)";
    const YIELD_NOTE: &'static str = "tokio::task::yield_now";
    const YIELD_FN: &'static str = "tokio::task::yield_now";

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
                drop(tokio::spawn(serve(stream, bufsize)));
            },
        )
    }

    fn spawn(rt: &mut Runtime, o: &SpawnOpts) -> Result<SpawnOut, String> {
        let (count, batch) = (o.count, o.batch);
        run_micro(rt, o.place, move || {
            common::spawn_join(count, batch, || tokio::spawn(async {}), |r| r.is_ok())
        })
    }

    fn yield_now(rt: &mut Runtime, o: &YieldOpts) -> Result<YieldOut, String> {
        let count = o.count;
        run_micro(rt, o.place, move || common::yield_loop(count, tokio::task::yield_now))
    }

    fn channel_name(local_sync: bool) -> Result<&'static str, UsageError> {
        if local_sync {
            return Err(UsageError(
                "--channel local-sync: tokio's own tokio::sync::mpsc is its channel".into(),
            ));
        }
        Ok("tokio::sync::mpsc")
    }

    fn channel(rt: &mut Runtime, o: &ChannelOpts) -> Result<ChannelOut, String> {
        let (messages, pairs, capacity) = (o.messages, o.pairs, o.capacity);
        // How the channel body reads its handles.
        let joins = || PairJoins {
            producer_ok: |r: Joined<bool>| matches!(r, Ok(true)),
            consumer_got: |r: Joined<Received>| r.map_err(|e| format!("consumer task failed: {e}")),
            producer_failed: "a producer failed",
        };
        let spawn_pair = move || {
            let make = tokio::sync::mpsc::channel::<u64>(capacity as usize);
            common::spawn_pair!(tokio::spawn, make, recv, messages)
        };
        run_micro(rt, o.place, move || {
            common::channel_pairs(pairs, messages, spawn_pair, joins())
        })
    }

    /// Cross-thread channel: a current_thread runtime on each of two threads (pinned to two
    /// CPUs), the producer's task sends 0..M through one bounded tokio::sync::mpsc channel of
    /// `capacity` messages to the consumer's task.
    fn xchannel(a: &Args, usage: &str) -> ! {
        let o = common::xchannel_opts(a).unwrap_or_else(|e| common::usage_exit("xchannel", IMPL, &e, usage));
        common::xchannel_bench::<Self, _, _, _, _, _>(
            o,
            "tokio::sync::mpsc (two current_thread runtimes on two threads)",
            |capacity| tokio::sync::mpsc::channel::<u64>(capacity as usize),
            |rt, place, tx, messages| run_micro(rt, place, move || common::produce!(tx, messages)).unwrap_or(false),
            |rt, place, mut rx| run_micro(rt, place, move || common::consume!(rx.recv())).unwrap_or_default(),
        )
    }
}
