//! Single-threaded sgemm GFLOPS of several blockings, interleaved call by call (so a busy
//! machine slows them alike), median / p25 / best per blocking:
//!     cargo run --release --example mmsweep -- 1024 2048 kc=160,256,320 ncb=512,800
use std::time::Instant;
use torchic_kernels::matmul::{blocking, sgemm_st_with, Blocking};
#[path = "common/args.rs"]
mod args;
use args::list;
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let base = blocking();
    let mut cfgs: Vec<Blocking> = vec![];
    for &kc in &list(&args, "kc", base.kc) {
        for &ncb in &list(&args, "ncb", base.ncb) {
            cfgs.push(Blocking { kc, ncb, ..base });
        }
    }
    for arg in args.iter().filter(|a| !a.contains('=')) {
        let dims: Vec<usize> = arg.split('x').map(|d| d.parse().unwrap()).collect();
        let (m, n, k) = match dims[..] {
            [n] => (n, n, n),
            [m, n, k] => (m, n, k),
            _ => panic!(),
        };
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32).collect();
        let mut c = vec![0f32; m * n];
        let reps = (20e9 / (m * n * k) as f64).clamp(15.0, 4000.0) as usize;
        let mut ts = vec![vec![]; cfgs.len()];
        for _ in 0..reps {
            for (i, blk) in cfgs.iter().enumerate() {
                let t = Instant::now();
                sgemm_st_with(Some(*blk), m, n, k, &a, &b, &mut c);
                ts[i].push(t.elapsed().as_secs_f64());
            }
        }
        for (i, blk) in cfgs.iter().enumerate() {
            let v = &mut ts[i];
            v.sort_by(|x, y| x.partial_cmp(y).unwrap());
            let g = |t: f64| 2.0 * (m * n * k) as f64 / t / 1e9;
            println!(
                "{arg} kc {} ncb {}: med {:.1} p25 {:.1} best {:.1}",
                blk.kc,
                blk.ncb,
                g(v[v.len() / 2]),
                g(v[v.len() / 4]),
                g(v[0])
            );
        }
    }
}
