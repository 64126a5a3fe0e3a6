//! Embedding lookup (gather_rows) and its backward (scatter_add_rows).
//!
//! Every index is checked against its bound before any row is touched; an
//! index out of range is an error (reported at the next read), never a wild
//! memory access.

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool};
use crate::view::{check_indices, chunk, split_count, Arr};

#[derive(Clone, Copy)]
struct RowsK {
    lo: usize,
    hi: usize,
    d: usize,
    src: *const f32,
    src_rs: isize,
    src_cs: isize,
    dst: *mut f32,
    dst_rs: isize,
    idx: *const i32,
    idx_s: isize,
    scatter: bool,
}
// SAFETY: pointers into validated views; gather tasks write disjoint dst rows, scatter is one task
unsafe impl Send for RowsK {}
// SAFETY: as for Send: disjoint rows per task, scatter single-threaded
unsafe impl Sync for RowsK {}

impl RowsK {
    /// rows 0..rows of `src` (any strides) against the contiguous rows of `dst`,
    /// through `idx`: gather reads src[idx[r]] into dst[r], scatter adds src[r]
    /// into dst[idx[r]]
    fn new(src: &Arr, dst: &Arr, idx: &Arr, rows: usize, scatter: bool) -> RowsK {
        let d = dst.shape[1];
        RowsK {
            lo: 0,
            hi: rows,
            d,
            src: src.f(),
            src_rs: src.st[0],
            src_cs: src.st[1],
            dst: dst.f(),
            dst_rs: d as isize,
            idx: idx.i(),
            idx_s: idx.st[0],
            scatter,
        }
    }
}

impl Kernel for RowsK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let w = S::W;
        for r in self.lo..self.hi {
            // SAFETY: idx was range-checked (view::check_indices); rows lo..hi are in both views
            unsafe {
                let i = *self.idx.offset(r as isize * self.idx_s) as isize;
                // gather: dst row r <- src row i;  scatter: dst row i += src row r
                let (s, o) = if self.scatter {
                    (
                        self.src.offset(r as isize * self.src_rs),
                        self.dst.offset(i * self.dst_rs),
                    )
                } else {
                    (
                        self.src.offset(i * self.src_rs),
                        self.dst.offset(r as isize * self.dst_rs),
                    )
                };
                if self.src_cs != 1 {
                    for j in 0..self.d {
                        let v = *s.offset(j as isize * self.src_cs);
                        if self.scatter {
                            *o.add(j) += v
                        } else {
                            *o.add(j) = v
                        }
                    }
                    continue;
                }
                let mut j = 0;
                while j + w <= self.d {
                    let v = S::load(s.add(j));
                    S::store(
                        o.add(j),
                        if self.scatter {
                            S::add(S::load(o.add(j)), v)
                        } else {
                            v
                        },
                    );
                    j += w;
                }
                while j < self.d {
                    if self.scatter {
                        *o.add(j) += *s.add(j)
                    } else {
                        *o.add(j) = *s.add(j)
                    }
                    j += 1;
                }
            }
        }
    }
}

/// out (R, D) = table[idx]   (table (V, D) any strides, idx (R,))
pub fn gather_rows(pool: &Pool, out: &Arr, table: &Arr, idx: &Arr) -> KResult {
    check_indices(idx, table.shape[0], "index")?;
    let (r, d) = (out.shape[0], out.shape[1]);
    let k = RowsK::new(table, out, idx, r, false);
    let n = split_count(r * d, pool.threads(), crate::elementwise::PAR_MIN).min(r.max(1));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(r, n, t, 1);
        let k = &k;
        dispatch(RowsK { lo, hi, ..*k });
    });
    Ok(())
}

/// out (V, D)[idx[r]] += src[r]   (rows can collide: one thread, in order)
pub fn scatter_add_rows(out: &Arr, src: &Arr, idx: &Arr) -> KResult {
    check_indices(idx, out.shape[0], "index")?;
    dispatch(RowsK::new(src, out, idx, src.shape[0], true));
    Ok(())
}
