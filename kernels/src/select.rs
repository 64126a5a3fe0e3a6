//! where(cond, a, b) over float32 values under a bool cond: masked_fill's (attention's
//! causal mask, `att.masked_fill(mask == 0, -inf)`, and its backward, which zeroes the
//! gradient there). The generic typed path walks every element with its own index
//! arithmetic and a branch (nanoGPT's (12, 4, 64, 64) masked_fill: 115 us, 7x a float32
//! multiply of the same shape); here each inner run of the nest is one branch-free loop
//! over slices, which the compiler vectorizes for the ISA it is dispatched on, where the
//! run is contiguous in out, cond and each value operand or broadcast (stride 0) in a
//! value operand. Any other run takes a strided loop. Each element is one of a or b,
//! copied: the same bits as the typed path.

use crate::arch::{dispatch, Kernel, Simd};
use crate::elementwise::PAR_MIN;
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, split_tasks, Arr, Nest};

struct WhereK<'a> {
    nest: &'a Nest<4>,
    lo: usize,
    hi: usize,
    /// out, cond (u8), a, b base addresses
    p: [usize; 4],
}

/// one contiguous run: out[i] = cond[i] != 0 ? a[i] : b[i], a (b) read at stride SA (SB): 0 or 1
#[inline(always)]
unsafe fn run_dense<const SA: usize, const SB: usize>(
    len: usize,
    o: *mut f32,
    c: *const u8,
    a: *const f32,
    b: *const f32,
) {
    let o = std::slice::from_raw_parts_mut(o, len);
    let c = std::slice::from_raw_parts(c, len);
    let a = std::slice::from_raw_parts(a, if SA == 1 { len } else { 1 });
    let b = std::slice::from_raw_parts(b, if SB == 1 { len } else { 1 });
    for i in 0..len {
        let x = a[i * SA];
        let y = b[i * SB];
        o[i] = if c[i] != 0 { x } else { y };
    }
}

impl Kernel for WhereK<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (_, s) = self.nest.inner();
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some((off, len)) = runs.next_run() {
            // SAFETY: the run's offsets (the Nest over the validated views) stay inside every view
            unsafe {
                let o = (self.p[0] as *mut f32).offset(off[0]);
                let c = (self.p[1] as *const u8).offset(off[1]);
                let a = (self.p[2] as *const f32).offset(off[2]);
                let b = (self.p[3] as *const f32).offset(off[3]);
                match (s[0], s[1], s[2], s[3]) {
                    (1, 1, 0, 1) => run_dense::<0, 1>(len, o, c, a, b),
                    (1, 1, 1, 0) => run_dense::<1, 0>(len, o, c, a, b),
                    (1, 1, 1, 1) => run_dense::<1, 1>(len, o, c, a, b),
                    (1, 1, 0, 0) => run_dense::<0, 0>(len, o, c, a, b),
                    _ => {
                        for i in 0..len as isize {
                            let pick = *c.offset(i * s[1]) != 0;
                            *o.offset(i * s[0]) = if pick {
                                *a.offset(i * s[2])
                            } else {
                                *b.offset(i * s[3])
                            };
                        }
                    }
                }
            }
        }
    }
}

// SAFETY: addresses of validated views; tasks write disjoint ranges of out
unsafe impl Send for WhereK<'_> {}
// SAFETY: as for Send
unsafe impl Sync for WhereK<'_> {}

/// out = where(cond, a, b): out, a, b float32, cond bool (one byte, 0 or not), all
/// broadcast to out's shape (any strides)
pub fn where_f32(pool: &Pool, out: &Arr, cond: &Arr, a: &Arr, b: &Arr) -> KResult {
    let nest = Nest::<4>::new(
        out.shape(),
        [out.strides(), cond.strides(), a.strides(), b.strides()],
    );
    // (one task where out may overlap itself: a stride-0 dim of more than one element)
    let whole = !out
        .shape()
        .iter()
        .zip(out.strides())
        .all(|(&n, &s)| n == 1 || s != 0);
    let n = if whole {
        1
    } else {
        split_tasks(nest.total, pool.threads(), PAR_MIN)
    };
    let p = [
        out.ptr as usize,
        cond.ptr as usize,
        a.ptr as usize,
        b.ptr as usize,
    ];
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        dispatch(WhereK {
            nest: &nest,
            lo,
            hi,
            p,
        });
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::DType;

    #[test]
    fn where_matches_the_elementwise_rule_for_every_layout() {
        // out (3, 5, 37): cond broadcast over dim 0, a a scalar or strided, b contiguous
        let (d0, d1, d2) = (3usize, 5usize, 37usize);
        let n = d0 * d1 * d2;
        let mut cond: Vec<u8> = (0..d1 * d2).map(|i| (i * 7 % 3 == 0) as u8).collect();
        let mut a: Vec<f32> = (0..2 * n).map(|i| i as f32 + 0.5).collect();
        let mut b: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
        let shape = [d0, d1, d2];
        let cv = Arr::new(cond.as_mut_ptr(), DType::B8, &shape, &[0, d2 as isize, 1]);
        let bv = Arr::new(
            b.as_mut_ptr() as *mut u8,
            DType::F32,
            &shape,
            &[(d1 * d2) as isize, d2 as isize, 1],
        );
        let layouts: [[isize; 3]; 3] = [
            [0, 0, 0],                                    // a scalar
            [(d1 * d2) as isize, d2 as isize, 1],         // contiguous
            [2, 2 * (d0 * d2) as isize, 2 * d0 as isize], // strided, permuted
        ];
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            for st in layouts {
                for swap in [false, true] {
                    let av = Arr::new(a.as_mut_ptr() as *mut u8, DType::F32, &shape, &st);
                    let mut out = vec![f32::NAN; n];
                    let ov = Arr::new(
                        out.as_mut_ptr() as *mut u8,
                        DType::F32,
                        &shape,
                        &[(d1 * d2) as isize, d2 as isize, 1],
                    );
                    let (x, y) = if swap { (&bv, &av) } else { (&av, &bv) };
                    where_f32(&pool, &ov, &cv, x, y).unwrap();
                    for i in 0..d0 {
                        for j in 0..d1 {
                            for k in 0..d2 {
                                // SAFETY: (i, j, k) lies inside every view's layout over its buffer
                                let at = |v: &Arr| unsafe {
                                    *(v.ptr as *const f32).offset(
                                        i as isize * v.st[0]
                                            + j as isize * v.st[1]
                                            + k as isize * v.st[2],
                                    )
                                };
                                let want = if cond[j * d2 + k] != 0 { at(x) } else { at(y) };
                                assert_eq!(out[(i * d1 + j) * d2 + k].to_bits(), want.to_bits());
                            }
                        }
                    }
                }
            }
        }
    }
}
