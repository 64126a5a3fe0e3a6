//! adam_update: Adam / AdamW's whole update of one parameter in one pass (ops.py's row),
//! the same bits as the workers (NumPy float32) and webgpu kernels.
//!
//! Per element, in float32, in this order (Rust never fuses a multiply and an add, so
//! every product is rounded as NumPy rounds it):
//!   g = -g (maximize); g = g + p * l2 (Adam's L2 decay); p = p * decay (AdamW);
//!   m = beta1 * m + g * (1 - beta1);  v = beta2 * v + (g * g) * (1 - beta2);
//!   p = p + m / (sqrt(v) * s5 + eps) * s6
//! The loop is plain f32 arithmetic, run through `dispatch` so it is compiled (and
//! auto-vectorised: sqrt and division are exact vector instructions) with the active
//! ISA's features, and split over the pool in flat ranges.

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, one_float_dtype, split_count, Arr};

/// elements per pool task at least (a few microseconds of work)
const PAR_MIN: usize = 1 << 14;
/// the scalars of ops.py's row, in its order
pub const SCALARS: usize = 10;

#[derive(Clone, Copy)]
struct Scalars {
    beta1: f32,
    c1: f32,
    beta2: f32,
    c2: f32,
    eps: f32,
    inv_sqrt_bc2: f32,
    neg_step: f32,
    decay: f32,
    l2: f32,
    maximize: bool,
}

struct AdamK {
    p: *mut f32,
    g: *const f32,
    m: *mut f32,
    v: *mut f32,
    lo: usize,
    hi: usize,
    s: Scalars,
}

// SAFETY: raw pointers into validated views; tasks update disjoint element ranges
unsafe impl Sync for AdamK {}

impl Kernel for AdamK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let n = self.hi - self.lo;
        // SAFETY: p, g, m, v are validated contiguous f32 views of at least `hi` elements
        // that do not overlap (check_views), so the slices do not alias
        let (p, g, m, v) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.p.add(self.lo), n),
                std::slice::from_raw_parts(self.g.add(self.lo), n),
                std::slice::from_raw_parts_mut(self.m.add(self.lo), n),
                std::slice::from_raw_parts_mut(self.v.add(self.lo), n),
            )
        };
        let s = self.s;
        for i in 0..n {
            let mut gi = g[i];
            if s.maximize {
                gi = -gi;
            }
            let mut pi = p[i];
            if s.l2 != 0.0 {
                gi += pi * s.l2;
            }
            if s.decay != 1.0 {
                pi *= s.decay;
            }
            let mi = s.beta1 * m[i] + gi * s.c1;
            let vi = s.beta2 * v[i] + (gi * gi) * s.c2;
            m[i] = mi;
            v[i] = vi;
            p[i] = pi + mi / (vi.sqrt() * s.inv_sqrt_bc2 + s.eps) * s.neg_step;
        }
    }
}

/// The contract of ops.py's row (record.rs's AdamUpdate arm): out (the parameter), g,
/// m, v f32 of one shape, contiguous and pairwise disjoint; s f32 (10,).
pub fn check_views(v: &[Arr]) -> Result<(), String> {
    let names = ["out", "g", "m", "v", "s"];
    // (all f32, or all f64: rows64.rs)
    one_float_dtype(v, &names)?;
    for (x, name) in v[..4].iter().zip(names) {
        if !x.is_contiguous() {
            return Err(format!(
                "{name} must be contiguous, strides {:?}",
                x.strides()
            ));
        }
        if x.shape() != v[0].shape() {
            return Err(format!(
                "{name} shape {:?} != out shape {:?}",
                x.shape(),
                v[0].shape()
            ));
        }
    }
    if v[4].shape() != [SCALARS] {
        return Err(format!(
            "s must have shape [{SCALARS}], has {:?}",
            v[4].shape()
        ));
    }
    let n = v[0].numel();
    let bytes = n * 4;
    for i in 0..4 {
        for j in i + 1..4 {
            let (a, b) = (v[i].ptr as usize, v[j].ptr as usize);
            if n > 0 && a < b + bytes && b < a + bytes {
                return Err(format!("{} and {} overlap", names[i], names[j]));
            }
        }
    }
    Ok(())
}

/// The update, the views validated by `check_views`.
pub fn adam_update(pool: &Pool, p: &Arr, g: &Arr, m: &Arr, v: &Arr, s: &Arr) -> KResult {
    let n = p.numel();
    // SAFETY: s is the validated scalars view and k is below its length
    let word = |k: usize| unsafe { *s.f().offset(k as isize * s.st[0]) };
    let base = AdamK {
        p: p.f(),
        g: g.f(),
        m: m.f(),
        v: v.f(),
        lo: 0,
        hi: n,
        s: Scalars {
            beta1: word(0),
            c1: word(1),
            beta2: word(2),
            c2: word(3),
            eps: word(4),
            inv_sqrt_bc2: word(5),
            neg_step: word(6),
            decay: word(7),
            l2: word(8),
            maximize: word(9) != 0.0,
        },
    };
    let parts = split_count(n, pool.threads(), PAR_MIN);
    pool.run(parts, &|t| {
        let (lo, hi) = chunk(n, parts, t, 64);
        let base = &base;
        if lo < hi {
            dispatch(AdamK { lo, hi, ..*base });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::DType;

    #[test]
    fn update_follows_the_rows_order_in_f32() {
        let pool = Pool::new(2);
        let n = 40_000;
        let mut p: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let g: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 0.5).collect();
        let mut m: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.01).collect();
        let mut v: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.001).collect();
        let mut s = [0.9f32, 0.1, 0.999, 0.001, 1e-8, 1.2, -0.003, 0.99, 0.0, 1.0];
        let (p0, m0, v0) = (p.clone(), m.clone(), v.clone());
        let mut gc = g.clone();
        let arr = |d: &mut Vec<f32>| Arr::f32s(d, &[n]);
        let (pa, ga, ma, va) = (arr(&mut p), arr(&mut gc), arr(&mut m), arr(&mut v));
        let sa = Arr::f32s(&mut s, &[SCALARS]);
        check_views(&[pa, ga, ma, va, sa]).unwrap();
        adam_update(&pool, &pa, &ga, &ma, &va, &sa).unwrap();
        for i in 0..n {
            let gi = -g[i];
            let mi = 0.9f32 * m0[i] + gi * 0.1;
            let vi = 0.999f32 * v0[i] + (gi * gi) * 0.001;
            let pi = p0[i] * 0.99 + mi / (vi.sqrt() * 1.2 + 1e-8) * -0.003;
            assert_eq!((p[i], m[i], v[i]), (pi, mi, vi), "element {i}");
        }
        // overlapping operands, a wrong scalar count, a strided g: refused
        assert!(check_views(&[pa, pa, ma, va, sa])
            .unwrap_err()
            .contains("overlap"));
        let short = Arr::f32s(&mut s[..9], &[9]);
        assert!(check_views(&[pa, ga, ma, va, short]).is_err());
        let strided = Arr::new(gc.as_mut_ptr() as *mut u8, DType::F32, &[n / 2], &[2]);
        let p2d = Arr::f32s(&mut p, &[n / 2, 2]);
        assert!(check_views(&[p2d, ga, ma, va, sa])
            .unwrap_err()
            .contains("shape"));
        let pa2 = Arr::f32s(&mut p[..n / 2], &[n / 2]);
        let ma2 = Arr::f32s(&mut m[..n / 2], &[n / 2]);
        let va2 = Arr::f32s(&mut v[..n / 2], &[n / 2]);
        assert!(check_views(&[pa2, strided, ma2, va2, sa])
            .unwrap_err()
            .contains("contiguous"));
    }
}
