//! Single-threaded sgemm GFLOPS of the active ISA (best of several runs).
//!     cargo run --release --example mmbench -- 128 256 1024 2048 128x256x512
//!     TORCHIC_SIMD_ISA=avx2 cargo run --release --example mmbench -- 1024
use std::time::Instant;
fn main() {
    for arg in std::env::args().skip(1) {
        // N (square) or MxNxK
        let dims: Vec<usize> = arg.split('x').map(|d| d.parse().unwrap()).collect();
        let (m, n, k) = match dims[..] {
            [n] => (n, n, n),
            [m, n, k] => (m, n, k),
            _ => panic!("give N or MxNxK, got {arg}"),
        };
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32).collect();
        let mut c = vec![0f32; m * n];
        let reps = (4e9 / (m * n * k) as f64).clamp(3.0, 2000.0) as usize;
        let mut best = f64::MAX;
        for _ in 0..reps {
            let t = Instant::now();
            torchic_kernels::matmul::sgemm_st(m, n, k, &a, &b, &mut c);
            best = best.min(t.elapsed().as_secs_f64());
        }
        print!("{arg}: {:.1}  ", 2.0 * (m * n * k) as f64 / best / 1e9);
    }
    println!();
}
