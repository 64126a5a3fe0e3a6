//! Embedding lookup (gather_rows) and its backward (scatter_add_rows).
//!
//! Every index is checked against its bound before any row is touched; an
//! index out of range is an error (reported at the next read), never a wild
//! memory access.

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{check_indices, chunk, idx_i32, split_count, Arr, DType};

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

/// out (R, D) = table[idx]   (table (V, D) any strides and dtype, idx (R,) i32 or i64)
pub fn gather_rows(pool: &Pool, out: &Arr, table: &Arr, idx: &Arr) -> KResult {
    check_indices(idx, table.shape[0], "index")?;
    if table.itemsize() != 4 {
        return gather_bytes(out, table, idx);
    }
    if out.shape[1] == 1 && idx.dtype == DType::I64 {
        return single(Some(pool), out, table, idx);
    }
    let mut keep = Vec::new();
    let idx = &idx_i32(idx, &mut keep);
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

/// gather_rows of a table whose elements are not 32-bit: rows copied as bytes
fn gather_bytes(out: &Arr, table: &Arr, idx: &Arr) -> KResult {
    let (r, d, item) = (out.shape[0], out.shape[1], table.itemsize());
    let (rs, cs) = (table.st[0], table.st[1]);
    for row in 0..r {
        let i = idx.index(row) as isize;
        // SAFETY: idx was range-checked, so table row i and out row `row` (contiguous, d
        // elements of `item` bytes) lie inside their validated views
        unsafe {
            let dst = out.ptr.add(row * d * item);
            let src = table.ptr.offset(i * rs * item as isize);
            if cs == 1 {
                std::ptr::copy_nonoverlapping(src, dst, d * item);
            } else {
                for j in 0..d {
                    std::ptr::copy_nonoverlapping(
                        src.offset(j as isize * cs * item as isize),
                        dst.add(j * item),
                        item,
                    );
                }
            }
        }
    }
    Ok(())
}

/// out (V, D)[idx[r]] += src[r]   (rows can collide: one thread, in order)
pub fn scatter_add_rows(out: &Arr, src: &Arr, idx: &Arr) -> KResult {
    check_indices(idx, out.shape[0], "index")?;
    if out.dtype == crate::view::DType::F64 {
        let (d, rs, cs) = (out.shape[1], src.st[0], src.st[1]);
        for r in 0..src.shape[0] {
            let i = idx.index(r) as usize;
            for j in 0..d {
                // SAFETY: idx was range-checked: out row i and src row r lie in their views
                unsafe {
                    *out.d().add(i * d + j) += *src.d().offset(r as isize * rs + j as isize * cs);
                }
            }
        }
        return Ok(());
    }
    if out.shape[1] == 1 && idx.dtype == DType::I64 {
        return single(None, out, src, idx);
    }
    let mut keep = Vec::new();
    let idx = &idx_i32(idx, &mut keep);
    dispatch(RowsK::new(src, out, idx, src.shape[0], true));
    Ok(())
}

/// gather_rows / scatter_add_rows of single-element f32 rows through int64 indices (max
/// pooling's picks and their gradient): one element per index, no i32 copy of the indices
/// and no row loop. The indices were range-checked (the callers). Gather: tasks over out's
/// rows; scatter (pool None): in order, on the calling thread.
fn single(pool: Option<&Pool>, out: &Arr, src: &Arr, idx: &Arr) -> KResult {
    let scatter = pool.is_none();
    let rows = if scatter { src.shape[0] } else { out.shape[0] };
    let (ss, is) = (src.st[0], idx.st[0]);
    let p = SendPtr((out.f(), src.f() as *const f32, idx.ptr as *const i64));
    let body = |lo: usize, hi: usize| {
        let p = &p;
        let (o, s, ix) = p.0;
        for r in lo..hi {
            // SAFETY: idx[r] was range-checked against out's (scatter) or src's (gather)
            // rows; r < rows lies inside the other view; out is contiguous (R, 1)
            unsafe {
                let i = ix.offset(r as isize * is).read_unaligned() as isize;
                if scatter {
                    *o.offset(i) += *s.offset(r as isize * ss);
                } else {
                    *o.add(r) = *s.offset(i * ss);
                }
            }
        }
    };
    match pool {
        None => body(0, rows),
        Some(pool) => {
            let n = split_count(rows, pool.threads(), crate::elementwise::PAR_MIN);
            pool.run(n, &|t| {
                let (lo, hi) = chunk(rows, n, t, 1);
                body(lo, hi)
            });
        }
    }
    Ok(())
}
