//! Stream hand-off cost from Rust: push one no-op task, wait for it.
//!     cargo run --release --example handoff
use std::time::Instant;
use torchic_kernels::runtime::{KernelError, Pool, Stream, Task};

struct Nop;
impl Task for Nop {
    fn ops(&self) -> usize {
        1
    }
    fn run(&self, _: &Pool, finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>)) {
        finished(Ok(()))
    }
}

fn main() {
    let s: Stream<Nop> = Stream::new(1);
    let mut v = vec![];
    for _ in 0..5000 {
        let t = Instant::now();
        let q = s.push(Nop);
        let t1 = t.elapsed();
        s.wait(q);
        v.push((t1.as_nanos(), t.elapsed().as_nanos()));
    }
    v.sort_by_key(|x| x.1);
    println!(
        "median push {} ns, push + wait round trip {} ns",
        v[2500].0, v[2500].1
    );
}
