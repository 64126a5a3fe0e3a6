//! Fixed cost of a prepared program's ops: a chain of `n` adds of `r` x `c` float32
//! blocks, run the way the coordinator runs a pushed program (no Python, no threads).
//!     cargo run --release --example progbench -- 100 32 32
use std::sync::{Arc, Mutex};
use std::time::Instant;
use torchic_kernels::ops;
use torchic_kernels::record::{prepare, Batch};
use torchic_kernels::runtime::{Pool, Task};

fn view(rec: &mut Vec<i64>, boff: i64, bytes: i64, shape: &[i64]) {
    let strides = [shape[1], 1];
    rec.extend([0, boff, bytes, 0, 0, 2]);
    rec.extend(shape);
    rec.extend(strides);
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (n, r, c) = match args[..] {
        [n, r, c] => (n, r, c),
        _ => (100, 32, 32),
    };
    let bytes = (r * c * 4) as i64;
    let mut mem = vec![0f32; r * c * 4];
    let arenas = [(mem.as_mut_ptr() as usize, mem.len() * 4)];
    let shape = [r as i64, c as i64];
    let mut words = Vec::new();
    for i in 0..n {
        // x (block 0 or 2 in turn) + y (block 1) -> the other of 0 / 2
        let (src, dst) = if i % 2 == 0 { (0, 2) } else { (2, 0) };
        words.extend([ops::code_of("add").unwrap(), 3, 0, 0, 0, 0]);
        view(&mut words, dst * bytes, bytes, &shape);
        view(&mut words, src * bytes, bytes, &shape);
        view(&mut words, bytes, bytes, &shape);
    }
    let program = prepare(&words, &arenas, &[]).expect("a valid program");
    let batch = Batch::of_program(
        Arc::new(program),
        Arc::new(Mutex::new(arenas.to_vec())),
        Vec::new(),
    );
    let pool = Pool::new(1);
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20000);
    let mut best = f64::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..reps {
            batch.run(&pool, &mut |res| assert!(res.is_ok()));
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    println!(
        "{n} adds of {r}x{c}: {:.1} ns per op",
        best * 1e9 / n as f64
    );
}
