//! Single-threaded sgemm GFLOPS of the active ISA (best of several runs).
//!     cargo run --release --example mmbench -- 128 256 1024 2048
//!     TORCHIC_SIMD_ISA=avx2 cargo run --release --example mmbench -- 1024
use std::time::Instant;
fn main() {
    for n in std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap())
    {
        let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32).collect();
        let b = a.clone();
        let mut c = vec![0f32; n * n];
        let reps = (4e9 / (n * n * n) as f64).clamp(3.0, 2000.0) as usize;
        let mut best = f64::MAX;
        for _ in 0..reps {
            let t = Instant::now();
            torchic_kernels::matmul::sgemm_st(n, n, n, &a, &b, &mut c);
            best = best.min(t.elapsed().as_secs_f64());
        }
        print!("{n}: {:.1}  ", 2.0 * (n * n * n) as f64 / best / 1e9);
    }
    println!();
}
