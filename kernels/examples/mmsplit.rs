//! Multi-threaded sgemm GFLOPS of several row splits and blockings, interleaved call by
//! call (a busy machine slows them alike), median / p25 / best per variant. "lib" is the
//! library's own `matmul` (its Split::plan); "P x KC" cuts M into P equal parts of whole
//! micro-tiles, claimed by the pool's threads as they come free; "P cols" cuts N instead:
//! "indep" has every thread multiply the whole product on its own (into its own C): what
//! one core makes while the others work too, counted for all threads.
//!     cargo run --release --example mmsplit -- 1024 2048 threads=2 parts=2,4,8 cols=2,4 indep
use std::time::Instant;
use torchic_kernels::matmul::{blocking, matmul, sgemm_st_rows, Blocking};
use torchic_kernels::runtime::Pool;
use torchic_kernels::view::{Arr, DType};

#[path = "common/args.rs"]
mod args;
use args::list;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads = list(&args, "threads", 2)[0];
    let pool = Pool::new(threads);
    let base = blocking();
    // (parts, by columns, blocking); parts 0: the library's matmul
    let mut variants: Vec<(usize, bool, Blocking)> = vec![(0, false, base)];
    if args.iter().any(|a| a == "indep") {
        variants.push((usize::MAX, false, base));
    }
    for (key, cols) in [("parts", false), ("cols", true)] {
        for &parts in &list(&args, key, 0) {
            for &kc in &list(&args, "kc", base.kc) {
                if parts > 0 {
                    variants.push((parts, cols, Blocking { kc, ..base }));
                }
            }
        }
    }
    for arg in args.iter().filter(|a| !a.contains('=') && *a != "indep") {
        let n: usize = arg.parse().unwrap();
        let (m, k) = (n, n);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32).collect();
        let mut c = vec![0f32; m * n * threads];
        let cp = c.as_mut_ptr() as usize;
        let arr = |p: *const f32, r, cols| {
            Arr::new(
                p as *mut u8,
                DType::F32,
                &[1, r, cols],
                &[0, cols as isize, 1],
            )
        };
        let reps = (40e9 / (m * n * k) as f64).clamp(15.0, 2000.0) as usize;
        let mut ts = vec![vec![]; variants.len()];
        for _ in 0..reps {
            for (i, &(parts, cols, blk)) in variants.iter().enumerate() {
                let t = Instant::now();
                if parts == usize::MAX {
                    let (ap, bp) = (a.as_ptr() as usize, b.as_ptr() as usize);
                    // SAFETY: task p writes only its own m x n block of c (sized for every task); a, b are read
                    pool.run(threads, &|p| unsafe {
                        let c = (cp as *mut f32).add(p * m * n);
                        sgemm_st_rows(Some(blk), m, n, k, ap as _, k, bp as _, n, c, n);
                    });
                } else if parts == 0 {
                    let out = arr(cp as *const f32, m, n);
                    matmul(&pool, &out, &arr(a.as_ptr(), m, k), &arr(b.as_ptr(), k, n)).unwrap();
                } else {
                    let (ap, bp) = (a.as_ptr() as usize, b.as_ptr() as usize);
                    // SAFETY: the tasks' row / column ranges (view::chunk) are disjoint and inside m x n; a, b are read
                    pool.run(parts, &|p| unsafe {
                        let (ap, bp, cp) = (ap as *const f32, bp as *const f32, cp as *mut f32);
                        if cols {
                            let (lo, hi) = torchic_kernels::view::chunk(n, parts, p, blk.nr);
                            let (b, c) = (bp.add(lo), cp.add(lo));
                            sgemm_st_rows(Some(blk), m, hi - lo, k, ap, k, b, n, c, n);
                        } else {
                            let (lo, hi) = torchic_kernels::view::chunk(m, parts, p, blk.mr);
                            let (a, c) = (ap.add(lo * k), cp.add(lo * n));
                            sgemm_st_rows(Some(blk), hi - lo, n, k, a, k, bp, n, c, n);
                        }
                    });
                }
                ts[i].push(t.elapsed().as_secs_f64());
            }
        }
        for (i, &(parts, cols, blk)) in variants.iter().enumerate() {
            let v = &mut ts[i];
            v.sort_by(|x, y| x.partial_cmp(y).unwrap());
            let work = if parts == usize::MAX { threads } else { 1 };
            let g = |t: f64| 2.0 * (work * m * n * k) as f64 / t / 1e9;
            let name = match (parts, cols) {
                (0, _) => "lib".to_string(),
                (usize::MAX, _) => "indep".to_string(),
                (_, false) => format!("{parts} rows kc {}", blk.kc),
                (_, true) => format!("{parts} cols kc {}", blk.kc),
            };
            println!(
                "{arg} t={threads} {name}: med {:.1} p25 {:.1} best {:.1}",
                g(v[v.len() / 2]),
                g(v[v.len() / 4]),
                g(v[0])
            );
        }
    }
}
