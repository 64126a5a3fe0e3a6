//! The op stream: a coordinator thread that runs queued ops in issue order,
//! and a worker pool it splits large ops over. Both live here, in Rust, so the
//! Python side costs one FFI call per op (see backends/simd/__init__.py for
//! the measurements behind this choice).
//!
//! Waiting, everywhere, is "spin briefly, then sleep on a condvar": a spin
//! on shared memory answers in well under a microsecond, which is what a
//! chain of tiny ops needs, and the sleep keeps idle threads off the cores
//! (the machine has 2; the Python thread needs one).
//!
//! Pool protocol. One 64-bit word holds (epoch | ntasks | next task). The
//! coordinator publishes a job by writing a new epoch with next = 0; every
//! thread (coordinator included) claims tasks with a CAS on that word, so a
//! helper that wakes late can never claim a task of a later job: the epoch in
//! its snapshot no longer matches. The job closure is only read after a
//! successful claim, and the coordinator does not return (and so does not
//! drop the closure) until every claimed task has finished.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// how long an idle pool helper, or a reader waiting on the stream, spins before it sleeps
pub const SPIN: Duration = Duration::from_micros(50);
/// How long a reader spins (yielding) when the pool leaves a core free. Waking a
/// sleeping thread costs 10-100 us on a VM (an interrupt to a halted vCPU):
/// that is a third of a 256^3 matmul. With a spare core the spin costs nobody.
pub const READ_SPIN_SPARE_CORE: Duration = Duration::from_millis(2);
/// How long the idle coordinator spins (yielding) before it sleeps. Longer than
/// SPIN: Python pushes a batch of ops every ~100 us while it issues a chain of small
/// ops, and waking a sleeping thread costs 10-20 us on a VM (an interrupt to a
/// halted vCPU); a yielding spin leaves the CPU to any thread that wants it.
pub const COORD_SPIN: Duration = Duration::from_micros(1000);
/// How long an idle pool helper spins (yielding) before it sleeps: as long as the idle
/// coordinator does. The ops a training step splits come tens to hundreds of us apart
/// (small ops and the Python side's issue between them: an LSTM step's per-timestep
/// product, a LeNet step's conv products); a helper asleep after SPIN was woken for each
/// (a futex wake-up, 10-100 us on a VM) and joined an op of 20-200 us late or not at all,
/// so the second thread gained nothing (docs/perf/conv.md, "Two threads").
pub const HELPER_SPIN: Duration = COORD_SPIN;
/// How often a reader asleep in `Stream::wait` wakes to help the pool again.
pub const HELP_POLL: Duration = Duration::from_millis(1);

/// Spin until `ready()` or `limit` has passed. After the first few
/// microseconds every check also yields the CPU: if the thread we are waiting
/// for was woken onto *our* CPU (Linux's wake-affine placement does that), a
/// pure spin would keep it off the CPU for a whole scheduler slice (~100 us,
/// measured); `sched_yield` lets it run at once.
#[inline]
fn spin_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    for _ in 0..256 {
        if ready() {
            return true;
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    loop {
        for _ in 0..16 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > limit {
            return ready();
        }
        std::thread::yield_now();
    }
}

type Job = *const (dyn Fn(usize) + Sync);

/// Tasks per pool thread for work cut into parts (`view::split_tasks`, matmul's
/// `Split::plan`): the pool's threads claim them as they come free, so a thread that
/// starts late takes fewer.
pub const TASKS_PER_THREAD: usize = 4;

const NEXT_BITS: u64 = 20;
const NEXT_MASK: u64 = (1 << NEXT_BITS) - 1;
pub const MAX_TASKS: usize = NEXT_MASK as usize;

struct PoolShared {
    state: AtomicU64, // epoch (24 bits) << 40 | ntasks << 20 | next
    job: UnsafeCell<Job>,
    pending: AtomicUsize,
    sleepers: AtomicUsize,
    /// Helpers claim tasks only while the gate is open (`Pool::open`): always when the
    /// pool leaves a core free, else while the calling thread runs a task inline (a reader
    /// waiting on the stream helps itself instead: `Pool::help`). A helper that took a task while the Python thread issues on the
    /// same core could be preempted by it for a whole scheduler slice, and the op (and
    /// every op behind it) waits for that task: the coordinator then works alone and the
    /// Python thread keeps its core.
    always_open: bool,
    openers: AtomicUsize,
    mx: Mutex<()>,
    cv: Condvar,
    stop: AtomicBool,
}

// SAFETY: every field but `job` is an atomic or a lock; `job` is written by run() only
// while no task is pending and read only for the epoch run() published and waits on
unsafe impl Sync for PoolShared {}
// SAFETY: as for Sync (the job `run` points to outlives every task of its epoch)
unsafe impl Send for PoolShared {}

fn noop(_: usize) {}

impl PoolShared {
    #[inline]
    fn epoch(s: u64) -> u64 {
        s >> 40
    }
    #[inline]
    fn is_open(&self) -> bool {
        self.always_open || self.openers.load(SeqCst) > 0
    }
    /// claim and run tasks of epoch `e` until none is left
    fn work(&self, e: u64) {
        loop {
            let s = self.state.load(Acquire);
            let ntasks = (s >> NEXT_BITS) & NEXT_MASK;
            let next = s & NEXT_MASK;
            if Self::epoch(s) != e || next >= ntasks {
                return;
            }
            if self
                .state
                .compare_exchange_weak(s, s + 1, AcqRel, Relaxed)
                .is_ok()
            {
                // SAFETY: the claim succeeded, so the job of epoch e is live until
                // `pending` (which counts this task) reaches zero
                let job = unsafe { &*(*self.job.get()) };
                job(next as usize);
                self.pending.fetch_sub(1, Release);
            }
        }
    }
}

pub struct Pool {
    shared: Arc<PoolShared>,
    /// workers in all (the caller + the helpers)
    threads: usize,
    /// the helpers' threads, joined by `stop` (the stream's close) or on drop
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    /// `threads` workers in all: the calling (coordinator) thread + threads-1 helpers; the
    /// gate always open when they leave a core of this machine free
    pub fn new(threads: usize) -> Pool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Pool::with_gate(threads, threads < cores)
    }

    fn with_gate(threads: usize, always_open: bool) -> Pool {
        let shared = Arc::new(PoolShared {
            state: AtomicU64::new(0),
            job: UnsafeCell::new(&noop as &(dyn Fn(usize) + Sync) as Job),
            pending: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            always_open,
            openers: AtomicUsize::new(0),
            mx: Mutex::new(()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let handles: Vec<JoinHandle<()>> = (1..threads.max(1))
            .map(|i| {
                let sh = shared.clone();
                std::thread::Builder::new()
                    .name(format!("torchic-simd-{i}"))
                    .spawn(move || helper_loop(&sh))
                    .expect("spawn pool thread")
            })
            .collect();
        Pool {
            shared,
            threads: threads.max(1),
            handles: Mutex::new(handles),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Stop and join the helpers (idempotent). Tasks run after it run on the caller alone
    /// (`run` claims whatever no helper took). The stream's `close` calls it: the context
    /// outlives the close (abi.rs `tk_free`), so its pool is never dropped.
    pub fn stop(&self) {
        self.shared.stop.store(true, SeqCst);
        {
            let _g = self.shared.mx.lock().unwrap();
            self.shared.cv.notify_all();
        }
        let handles: Vec<JoinHandle<()>> = self.handles.lock().unwrap().drain(..).collect();
        for h in handles {
            let _ = h.join();
        }
    }

    /// Let the helpers claim tasks (the gate, `PoolShared::always_open`) until the guard
    /// drops. (SeqCst, as the job's publication in `run`, which then wakes sleeping
    /// helpers: a helper going to sleep re-checks the gate under `mx`.)
    pub fn open(&self) -> GateGuard<'_> {
        self.shared.openers.fetch_add(1, SeqCst);
        GateGuard(&self.shared)
    }

    /// Claim and run tasks of the job running now, if any are unclaimed, as a helper
    /// does (the claim protocol makes any thread a safe helper); true if it ran one.
    /// A reader waiting on the stream calls it: it takes the closed gate's place.
    pub fn help(&self) -> bool {
        let sh = &*self.shared;
        let s = sh.state.load(Acquire);
        if s & NEXT_MASK >= (s >> NEXT_BITS) & NEXT_MASK {
            return false;
        }
        sh.work(PoolShared::epoch(s));
        true
    }

    /// Run f(0..ntasks) over the pool; returns when all have finished.
    pub fn run(&self, ntasks: usize, f: &(dyn Fn(usize) + Sync)) {
        if ntasks == 0 {
            return;
        }
        if ntasks == 1 || self.threads == 1 {
            for t in 0..ntasks {
                f(t);
            }
            return;
        }
        assert!(ntasks <= MAX_TASKS);
        let sh = &*self.shared;
        // SAFETY: no task of the previous epoch is pending (we waited for it),
        // so no thread reads `job` until the new epoch is published below.
        unsafe {
            *sh.job.get() = std::mem::transmute::<&(dyn Fn(usize) + Sync), Job>(f);
        }
        sh.pending.store(ntasks, Relaxed);
        let e = (PoolShared::epoch(sh.state.load(Relaxed)) + 1) & 0xff_ffff;
        // SeqCst: ordered before the `sleepers` load below (no lost wake-up)
        sh.state
            .store((e << 40) | ((ntasks as u64) << NEXT_BITS), SeqCst);
        // (helpers asleep behind a closed gate are woken when it opens: `open`)
        if sh.is_open() && sh.sleepers.load(SeqCst) > 0 {
            let _g = sh.mx.lock().unwrap();
            sh.cv.notify_all();
        }
        sh.work(e);
        if !spin_until(Duration::from_millis(1), || sh.pending.load(Acquire) == 0) {
            while sh.pending.load(Acquire) != 0 {
                std::thread::yield_now();
            }
        }
    }
}

/// An open gate (`Pool::open`); closes when dropped.
pub struct GateGuard<'a>(&'a PoolShared);

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        self.0.openers.fetch_sub(1, SeqCst);
    }
}

fn helper_loop(sh: &PoolShared) {
    let mut seen = 0u64;
    loop {
        // a job it has not worked on, with the gate open (or the pool stopping)
        let fresh = |sh: &PoolShared| {
            (PoolShared::epoch(sh.state.load(Acquire)) != seen && sh.is_open())
                || sh.stop.load(Relaxed)
        };
        if !spin_until(HELPER_SPIN, || fresh(sh)) {
            sh.sleepers.fetch_add(1, SeqCst);
            let mut g = sh.mx.lock().unwrap();
            while !fresh(sh) {
                g = sh.cv.wait(g).unwrap();
            }
            drop(g);
            sh.sleepers.fetch_sub(1, SeqCst);
        }
        if sh.stop.load(Relaxed) {
            return;
        }
        seen = PoolShared::epoch(sh.state.load(Acquire));
        sh.work(seen);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An error of one op, reported at the next read / sync.
#[derive(Debug, Clone)]
pub struct KernelError {
    pub kind: i32, // 1 IndexError, 2 ValueError, 3 RuntimeError
    pub msg: String,
}

impl KernelError {
    pub fn index(msg: String) -> Self {
        KernelError { kind: 1, msg }
    }
    pub fn value(msg: String) -> Self {
        KernelError { kind: 2, msg }
    }
}

pub type KResult = Result<(), KernelError>;

/// Raw pointers handed to the tasks of `Pool::run`: each task writes a disjoint
/// part of the out view, so sharing them across the pool is sound.
pub struct SendPtr<T>(pub T);
// SAFETY: the tasks of `Pool::run` write disjoint parts of the out view (see above)
unsafe impl<T> Sync for SendPtr<T> {}
// SAFETY: as for Sync: disjoint parts per task
unsafe impl<T> Send for SendPtr<T> {}

/// errors kept between two reads
pub const MAX_ERRORS: usize = 64;

/// What the coordinator executes: a batch of ops pushed together.
pub trait Task: Send {
    /// how many ops it holds (each gets its own sequence number)
    fn ops(&self) -> usize;
    /// Run the ops in order, calling `finished` once after each one with its
    /// result (an error carries the op's name). The stream marks the whole task
    /// done when `run` returns.
    fn run(&self, pool: &Pool, finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>));
}

struct StreamShared<T> {
    queue: Mutex<VecDeque<(u64, T)>>,
    qcv: Condvar,
    coord_sleeping: AtomicBool,
    pushed: AtomicU64,
    done: AtomicU64,
    wait_mx: Mutex<()>,
    wait_cv: Condvar,
    /// the smallest sequence number a sleeping reader waits for (u64::MAX: none)
    wake_at: AtomicU64,
    errors: Mutex<VecDeque<(&'static str, KernelError)>>,
    has_error: AtomicBool,
    stop: AtomicBool,
}

pub struct Stream<T: Task + 'static> {
    shared: Arc<StreamShared<T>>,
    /// the coordinator's pool; `run_inline` borrows it while the coordinator is idle
    pool: Arc<Pool>,
    coord: Mutex<Option<JoinHandle<()>>>,
    next_seq: AtomicU64,
    /// how long `wait` spins before it sleeps
    read_spin: Duration,
}

impl<T: Task + 'static> Stream<T> {
    pub fn new(threads: usize) -> Stream<T> {
        let shared = Arc::new(StreamShared {
            queue: Mutex::new(VecDeque::with_capacity(1024)),
            qcv: Condvar::new(),
            coord_sleeping: AtomicBool::new(false),
            pushed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            wait_mx: Mutex::new(()),
            wait_cv: Condvar::new(),
            wake_at: AtomicU64::new(u64::MAX),
            errors: Mutex::new(VecDeque::new()),
            has_error: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let sh = shared.clone();
        let pool = Arc::new(Pool::new(threads));
        let coord_pool = pool.clone();
        let coord = std::thread::Builder::new()
            .name("torchic-simd-coordinator".into())
            .spawn(move || {
                coordinator_loop(&sh, &coord_pool);
            })
            .expect("spawn coordinator");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Stream {
            shared,
            pool,
            coord: Mutex::new(Some(coord)),
            next_seq: AtomicU64::new(1),
            read_spin: if threads < cores {
                READ_SPIN_SPARE_CORE
            } else {
                SPIN
            },
        }
    }

    /// Run a task now on the calling thread when the stream is idle (`run_inline`), else
    /// queue it: what a push of small ops does (abi.rs `tk_push` with `inline`; a batch
    /// that ends in a large op is queued, so Python issues the next ops beside it).
    /// Queued on an idle stream, a small task costs two hand-offs (the coordinator's wake-up, then the reader's) and puts a
    /// third thread beside the caller and the pool's helper on a 2-core machine, and the
    /// caller that reads it soon spins or sleeps beside them: a lone 128^3 product ran at
    /// 0.55x NumPy on 2 threads, 0.71x on 1 on the loaded machine, with 2-2.5x NumPy's
    /// CPU time on 2 threads. Inline, the caller is the pool's first worker, as PyTorch's
    /// and NumPy's callers are; what it gives up is overlapping its next Python with the
    /// op, which measured no better (an MLP's forward + backward, 1 thread:
    /// docs/perf/simd_kernel_rows.md). The coordinator still runs whatever is pushed
    /// while the stream is busy (another Python thread's ops, compiled programs).
    /// Returns the sequence number of the task's last op.
    pub fn push_or_inline(&self, task: T) -> u64 {
        match self.run_inline(task) {
            Ok(seq) => seq,
            Err(task) => self.push(task),
        }
    }

    /// Queue a task; returns the sequence number of its last op (ops are
    /// numbered 1, 2, ... across tasks).
    pub fn push(&self, task: T) -> u64 {
        let sh = &*self.shared;
        let ops = task.ops() as u64;
        let mut q = sh.queue.lock().unwrap();
        if sh.stop.load(SeqCst) {
            // Closed (another thread's close raced this push past the caller's check):
            // dropped unrun and not numbered, so every sequence number stays within the
            // `done` that `close` publishes under this lock, and no wait hangs on it.
            return self.last_seq();
        }
        // numbered under the queue lock, so sequence order is queue order
        let first = self.next_seq.fetch_add(ops, Relaxed);
        let seq = first + ops - 1;
        if ops == 0 {
            return seq;
        }
        q.push_back((first, task));
        sh.pushed.store(seq, SeqCst);
        drop(q);
        // (notified after unlocking: a woken coordinator must not block on our lock.
        // It reads `coord_sleeping` before it locks the queue to sleep, and sleeps
        // only if the queue is empty then, so this push is never missed.)
        if sh.coord_sleeping.load(SeqCst) {
            sh.qcv.notify_one();
        }
        seq
    }

    /// Run `task` now on the calling thread if the stream is idle (nothing queued,
    /// nothing running), numbered and finished as if the coordinator had run it; else
    /// hand it back (the caller queues it with `push`). A reader that waits for the ops
    /// it has just issued then needs no hand-off to the coordinator and back (two thread
    /// wake-ups, 20 us to milliseconds on a busy machine: an eager script reading a 0-d
    /// index after `i + block_size`). The queue lock is held while it runs, so the
    /// coordinator (which pops under that lock) never runs beside it and the pool has
    /// one user at a time; a push from another thread waits for it.
    pub fn run_inline(&self, task: T) -> Result<u64, T> {
        let sh = &*self.shared;
        let q = sh.queue.lock().unwrap();
        let last = self.last_seq();
        if sh.stop.load(SeqCst) || !q.is_empty() || sh.done.load(Acquire) < last {
            return Err(task);
        }
        let ops = task.ops() as u64;
        if ops == 0 {
            return Ok(last);
        }
        let first = self.next_seq.fetch_add(ops, Relaxed);
        let seq = first + ops - 1;
        let gate = self.pool.open(); // (the caller is the pool's first worker)
        task.run(&self.pool, &mut |result| {
            if let Err((name, e)) = result {
                record_error(sh, name, e);
            }
        });
        drop(gate);
        drop(task);
        finish(sh, seq);
        sh.pushed.store(seq, SeqCst);
        drop(q);
        Ok(seq)
    }

    pub fn is_closed(&self) -> bool {
        self.shared.stop.load(Acquire)
    }

    pub fn last_seq(&self) -> u64 {
        self.next_seq.load(Relaxed) - 1
    }

    pub fn done(&self) -> u64 {
        self.shared.done.load(Acquire)
    }

    /// Block until task `seq` (and so every earlier one) has run.
    pub fn wait(&self, seq: u64) {
        let sh = &*self.shared;
        let ready = || sh.done.load(Acquire) >= seq;
        // A reader with a pool beside it works on the coordinator's split ops while it
        // waits (`Pool::help`), in the closed gate's place: the Python thread's core is
        // the second worker once Python has nothing left to issue, with no hand-off.
        // It spins (yielding) as long as the idle coordinator does, from its last task: its
        // core has nothing else to run while Python waits, and a compiled step's split ops
        // come a few small ops apart.
        let helps = self.pool.threads() > 1;
        let spin = if helps { COORD_SPIN } else { self.read_spin };
        loop {
            while spin_until(spin, || ready() || (helps && self.pool.help())) {
                if ready() {
                    return;
                }
            }
            // Sleep until `done` reaches seq (a helping reader wakes every HELP_POLL to
            // look for work again). The reader registers its target in `wake_at`
            // (fetch_min, under the lock) and re-checks `done`; `finish` stores `done`
            // and then reads `wake_at` (both SeqCst), so one of them sees the other: no
            // lost wake-up, and no wake-up at all for the batches before the one waited for.
            let mut g = sh.wait_mx.lock().unwrap();
            loop {
                sh.wake_at.fetch_min(seq, SeqCst);
                if sh.done.load(SeqCst) >= seq {
                    return;
                }
                if !helps {
                    g = sh.wait_cv.wait(g).unwrap();
                    continue;
                }
                let (g2, timeout) = sh.wait_cv.wait_timeout(g, HELP_POLL).unwrap();
                g = g2;
                if timeout.timed_out() {
                    break;
                }
            }
        }
    }

    pub fn has_error(&self) -> bool {
        self.shared.has_error.load(Acquire)
    }

    /// Take the oldest recorded error (op name, error); every failure is kept
    /// (up to MAX_ERRORS, then one summary), none is silently dropped.
    pub fn take_error(&self) -> Option<(&'static str, KernelError)> {
        let mut q = self.shared.errors.lock().unwrap();
        let e = q.pop_front();
        self.shared.has_error.store(!q.is_empty(), Release);
        e
    }
}

fn record_error<T>(sh: &StreamShared<T>, name: &'static str, e: KernelError) {
    let mut q = sh.errors.lock().unwrap();
    if q.len() < MAX_ERRORS {
        q.push_back((name, e));
    } else if q.len() == MAX_ERRORS {
        q.push_back((
            "(more ops)",
            KernelError {
                kind: 3,
                msg: "further errors not recorded".into(),
            },
        ));
    }
    sh.has_error.store(true, Release);
}

/// Mark op `seq` (and every earlier one) done and wake anyone waiting on it.
fn finish<T>(sh: &StreamShared<T>, seq: u64) {
    sh.done.store(seq, SeqCst);
    if sh.wake_at.load(SeqCst) <= seq {
        let _g = sh.wait_mx.lock().unwrap();
        // every sleeper wakes; those waiting for a later op register again
        sh.wake_at.store(u64::MAX, SeqCst);
        sh.wait_cv.notify_all();
    }
}

fn coordinator_loop<T: Task>(sh: &StreamShared<T>, pool: &Pool) {
    loop {
        let item = sh.queue.lock().unwrap().pop_front();
        match item {
            Some((first, task)) => {
                let last = first + task.ops() as u64 - 1;
                // closing: queued ops are dropped unrun (nobody can read their results)
                if !sh.stop.load(Acquire) {
                    task.run(pool, &mut |result| {
                        if let Err((name, e)) = result {
                            record_error(sh, name, e);
                        }
                    });
                }
                drop(task);
                // Every op of the task counts as done, however it ended. (Published once
                // per task, not per op: Python waits for the last op it pushed, and a
                // per-op store + wake-up would cost a futex call per op while it sleeps.)
                finish(sh, last);
            }
            None => {
                if sh.stop.load(Acquire) {
                    return;
                }
                let done = sh.done.load(Relaxed);
                if spin_until(COORD_SPIN, || {
                    sh.pushed.load(Acquire) > done || sh.stop.load(Relaxed)
                }) {
                    continue;
                }
                sh.coord_sleeping.store(true, SeqCst);
                let mut q = sh.queue.lock().unwrap();
                while q.is_empty() && !sh.stop.load(SeqCst) {
                    q = sh.qcv.wait(q).unwrap();
                }
                sh.coord_sleeping.store(false, SeqCst);
            }
        }
    }
}

impl<T: Task + 'static> Stream<T> {
    /// Stop the coordinator (the op running now finishes, queued ones are
    /// dropped unrun and counted as done, so every waiter is released) and
    /// join it and the pool's helpers. Idempotent. Later pushes are dropped the same way.
    pub fn close(&self) {
        self.shared.stop.store(true, SeqCst);
        {
            let _q = self.shared.queue.lock().unwrap();
            self.shared.qcv.notify_all();
        }
        let handle = self.coord.lock().unwrap().take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        // no op runs on the pool now (inline runs push under the caller's lock, as close
        // is called): its helpers go too
        self.pool.stop();
        // nothing runs any more: mark everything pushed as done, wake waiters
        let _q = self.shared.queue.lock().unwrap();
        self.shared.done.store(self.last_seq(), SeqCst);
        let _g = self.shared.wait_mx.lock().unwrap();
        self.shared.wait_cv.notify_all();
    }
}

impl<T: Task + 'static> Drop for Stream<T> {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_closed_gate_keeps_helpers_off_and_a_helping_thread_takes_tasks() {
        let pool = Pool::with_gate(2, false);
        let me = std::thread::current().id();
        for _ in 0..200 {
            let others = AtomicUsize::new(0);
            pool.run(8, &|_| {
                if std::thread::current().id() != me {
                    others.fetch_add(1, Relaxed);
                }
            });
            assert_eq!(
                others.load(Relaxed),
                0,
                "a helper claimed a task behind a closed gate"
            );
        }
        // another thread calling help() (a waiting reader) works on the job beside its caller
        let stop = AtomicBool::new(false);
        let helped = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Relaxed) {
                    pool.help();
                    std::hint::spin_loop();
                }
            });
            let hits: Vec<AtomicUsize> = (0..200).map(|_| AtomicUsize::new(0)).collect();
            pool.run(200, &|t| {
                hits[t].fetch_add(1, Relaxed);
                if std::thread::current().id() != me {
                    helped.fetch_add(1, Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            });
            stop.store(true, Relaxed);
            assert!(hits.iter().all(|h| h.load(Relaxed) == 1));
        });
        assert!(
            helped.load(Relaxed) > 0,
            "help() took no task of a 200 ms job"
        );
        // an open gate lets the helper in again: every task still runs once
        let _gate = pool.open();
        let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        pool.run(64, &|t| {
            hits[t].fetch_add(1, Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Relaxed) == 1));
    }

    #[test]
    fn a_stopped_pool_has_joined_its_helpers_and_runs_jobs_on_the_caller() {
        let pool = Pool::new(3);
        let helper = AtomicUsize::new(0);
        let probe = Mutex::new(Vec::new());
        pool.run(64, &|_| {
            probe.lock().unwrap().push(std::thread::current().id());
        });
        pool.stop();
        pool.stop(); // idempotent
        assert!(pool.handles.lock().unwrap().is_empty());
        let me = std::thread::current().id();
        let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        pool.run(64, &|t| {
            hits[t].fetch_add(1, Relaxed);
            if std::thread::current().id() != me {
                helper.fetch_add(1, Relaxed);
            }
        });
        assert!(hits.iter().all(|h| h.load(Relaxed) == 1));
        assert_eq!(
            helper.load(Relaxed),
            0,
            "a stopped pool's helper ran a task"
        );
    }

    #[test]
    fn pool_runs_every_task_once_across_many_jobs() {
        for threads in [1, 2, 3] {
            let pool = Pool::new(threads);
            for round in 0..2000usize {
                let n = 1 + round % 7;
                let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                pool.run(n, &|t| {
                    hits[t].fetch_add(1, Relaxed);
                });
                assert!(hits.iter().all(|h| h.load(Relaxed) == 1));
                if round % 500 == 0 {
                    std::thread::sleep(Duration::from_micros(200)); // let helpers sleep
                }
            }
        }
    }

    struct Add(Arc<AtomicUsize>, usize, bool);
    impl Task for Add {
        fn ops(&self) -> usize {
            1
        }
        fn run(&self, _: &Pool, finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>)) {
            if self.2 {
                return finished(Err(("add", KernelError::index("bad".into()))));
            }
            // order check: each task sees exactly its predecessors
            let v = self.0.fetch_add(1, SeqCst);
            assert_eq!(v, self.1);
            finished(Ok(()))
        }
    }

    #[test]
    fn a_push_after_close_is_dropped_and_never_waited_for() {
        let s: Stream<Add> = Stream::new(2);
        let c = Arc::new(AtomicUsize::new(0));
        s.wait(s.push(Add(c.clone(), 0, false)));
        s.close();
        let seq = s.push(Add(c.clone(), 1, false));
        // a wait for it returns: close counted everything numbered as done
        assert!(s.done() >= seq && s.done() == s.last_seq());
        assert_eq!(c.load(SeqCst), 1);
    }

    #[test]
    fn stream_runs_in_order_and_reports_errors() {
        let s: Stream<Add> = Stream::new(2);
        let c = Arc::new(AtomicUsize::new(0));
        let mut k = 0;
        for i in 0..1000 {
            let fail = i == 500;
            s.push(Add(c.clone(), k, fail));
            if !fail {
                k += 1;
            }
            if i % 100 == 0 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        s.wait(s.last_seq());
        assert_eq!(c.load(SeqCst), 999);
        assert!(s.has_error());
        let (name, e) = s.take_error().unwrap();
        assert_eq!((name, e.kind), ("add", 1));
        assert!(s.take_error().is_none());
    }

    #[test]
    fn run_inline_runs_in_order_on_an_idle_stream_only() {
        let s: Stream<Add> = Stream::new(2);
        let c = Arc::new(AtomicUsize::new(0));
        for k in 0..2000 {
            // queued and inline tasks interleave: every task sees exactly its predecessors
            let task = Add(c.clone(), k, false);
            if k % 3 == 0 {
                s.push(task);
            } else {
                match s.run_inline(task) {
                    // ran now: it and everything before it is done
                    Ok(seq) => assert!(s.done() >= seq && seq == s.last_seq()),
                    Err(task) => {
                        s.push(task);
                    }
                }
            }
        }
        s.wait(s.last_seq());
        assert_eq!(c.load(SeqCst), 2000);
        // an error of an inline task is recorded as the coordinator records it
        s.run_inline(Add(c.clone(), 2000, true)).ok().unwrap();
        assert_eq!(s.take_error().unwrap().1.kind, 1);
        s.close();
        assert!(s.run_inline(Add(c.clone(), 2000, false)).is_err());
    }
}
