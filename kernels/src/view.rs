//! Strided operands and the loop nest every elementwise-style kernel walks.
//!
//! `Arr` is a validated view (record.rs checks it against its block before the
//! op runs). `Nest` merges the dims of K views that share a shape into
//! as few loops as possible (size-1 dims dropped, dims merged where *every*
//! view is contiguous across them), innermost first; `Runs` then walks any
//! flat range [lo, hi) of it as inner runs of (per-view element offset, len),
//! which is how a kernel is split over threads without caring about shape.

use crate::runtime::{KResult, KernelError};

pub const MAXD: usize = 16;

/// Every element of the 1-D i32 / i64 view `idx` in [0, bound), else an IndexError
/// naming `what` (checked before an op writes anything).
pub fn check_indices(idx: &Arr, bound: usize, what: &str) -> KResult {
    let n = idx.shape[0];
    for r in 0..n {
        let v = idx.index(r);
        if v < 0 || v as usize >= bound {
            return Err(KernelError::index(format!(
                "{what} {v} is out of range [0, {bound})"
            )));
        }
    }
    Ok(())
}

/// The dtype codes of docs/DTYPES.md; the discriminant is the record's dtype word
/// (simd/__init__.py `_DTYPE_CODES`).
/// An i32 copy of an index view (i64 indices for the kernels that read i32: values outside
/// int32 become i32::MIN, which no bound admits), and a contiguous view of it; an i32
/// view is returned as it is. Call after the range check on the original values.
pub fn idx_i32(idx: &Arr, keep: &mut Vec<i32>) -> Arr {
    if idx.dtype == DType::I32 {
        return *idx;
    }
    keep.clear();
    keep.extend((0..idx.shape[0]).map(|r| i32::try_from(idx.index(r)).unwrap_or(i32::MIN)));
    let n = keep.len();
    Arr::i32s(keep, &[n])
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DType {
    F32 = 0,
    I32 = 1,
    F64 = 2,
    I64 = 3,
    B8 = 4,
    U8 = 5,
    I8 = 6,
    I16 = 7,
    F16 = 8,
    BF16 = 9,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::I32,
        DType::F64,
        DType::I64,
        DType::B8,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::F16,
        DType::BF16,
    ];
    /// the dtype of a record's dtype word
    pub fn from_code(code: i64) -> Option<DType> {
        usize::try_from(code)
            .ok()
            .and_then(|c| DType::ALL.get(c).copied())
    }
    /// bytes per element
    #[inline]
    pub const fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::B8 | DType::U8 | DType::I8 => 1,
        }
    }
    /// the bit of this dtype in a set of allowed dtypes (record.rs)
    #[inline]
    pub const fn bit(self) -> u16 {
        1 << self as u16
    }
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::B8 => "b8",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Arr {
    pub ptr: *mut u8,
    pub dtype: DType,
    pub nd: usize,
    pub shape: [usize; MAXD],
    pub st: [isize; MAXD],
}

// SAFETY: an Arr is a view of a block its owner keeps alive; the kernels split writes disjointly
unsafe impl Send for Arr {}
// SAFETY: as for Send: an Arr is only read through, or written at disjoint ranges per task
unsafe impl Sync for Arr {}

impl Arr {
    pub fn new(ptr: *mut u8, dtype: DType, shape: &[usize], st: &[isize]) -> Arr {
        let mut a = Arr {
            ptr,
            dtype,
            nd: shape.len(),
            shape: [0; MAXD],
            st: [0; MAXD],
        };
        a.shape[..shape.len()].copy_from_slice(shape);
        a.st[..st.len()].copy_from_slice(st);
        a
    }
    /// a contiguous f32 array over a slice (tests)
    pub fn f32s(data: &mut [f32], shape: &[usize]) -> Arr {
        let st = contiguous_strides(shape);
        Arr::new(
            data.as_mut_ptr() as *mut u8,
            DType::F32,
            shape,
            &st[..shape.len()],
        )
    }
    pub fn i32s(data: &mut [i32], shape: &[usize]) -> Arr {
        let st = contiguous_strides(shape);
        Arr::new(
            data.as_mut_ptr() as *mut u8,
            DType::I32,
            shape,
            &st[..shape.len()],
        )
    }
    #[inline]
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.nd]
    }
    #[inline]
    pub fn strides(&self) -> &[isize] {
        &self.st[..self.nd]
    }
    #[inline]
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }
    #[inline]
    pub fn f(&self) -> *mut f32 {
        self.ptr as *mut f32
    }
    #[inline]
    pub fn i(&self) -> *mut i32 {
        self.ptr as *mut i32
    }
    /// element `r` of a 1-D i32 or i64 index view (record.rs admits no other dtype)
    #[inline(always)]
    pub fn index(&self, r: usize) -> i64 {
        let off = r as isize * self.st[0];
        // SAFETY: r < shape[0] of the validated 1-D view, read at its own dtype's size
        unsafe {
            if self.dtype == DType::I64 {
                (self.ptr as *const i64).offset(off).read_unaligned()
            } else {
                (self.ptr as *const i32).offset(off).read_unaligned() as i64
            }
        }
    }
    #[inline]
    pub fn d(&self) -> *mut f64 {
        self.ptr as *mut f64
    }
    #[inline]
    pub fn itemsize(&self) -> usize {
        self.dtype.size()
    }
    /// row-major contiguous (size-1 dims may have any stride)
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expect = 1isize;
        for d in (0..self.nd).rev() {
            if self.shape[d] != 1 && self.st[d] != expect {
                return false;
            }
            expect *= self.shape[d] as isize;
        }
        true
    }
}

pub fn contiguous_strides(shape: &[usize]) -> [isize; MAXD] {
    let mut st = [0isize; MAXD];
    let mut s = 1isize;
    for d in (0..shape.len()).rev() {
        st[d] = s;
        s *= shape[d] as isize;
    }
    st
}

/// K views walked together; dims stored innermost first.
#[derive(Clone, Copy, Debug)]
pub struct Nest<const K: usize> {
    pub nd: usize,
    pub shape: [usize; MAXD],
    pub st: [[isize; MAXD]; K],
    pub total: usize,
}

impl<const K: usize> Nest<K> {
    // (inlined: built in the caller's frame, not copied out: a 0.5 KB struct per op)
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // k walks the K views' stride arrays in step
    pub fn new(shape: &[usize], strides: [&[isize]; K]) -> Nest<K> {
        let mut n = Nest {
            nd: 0,
            shape: [1; MAXD],
            st: [[0; MAXD]; K],
            total: shape.iter().product(),
        };
        for d in (0..shape.len()).rev() {
            let size = shape[d];
            if size == 1 {
                continue;
            }
            if n.nd > 0 {
                let p = n.nd - 1;
                let psize = n.shape[p] as isize;
                if (0..K).all(|k| strides[k][d] == n.st[k][p] * psize) {
                    n.shape[p] *= size;
                    continue;
                }
            }
            n.shape[n.nd] = size;
            for k in 0..K {
                n.st[k][n.nd] = strides[k][d];
            }
            n.nd += 1;
        }
        n
    }
    /// innermost length and strides (a 0-d nest is one run of length 1)
    #[inline(always)]
    pub fn inner(&self) -> (usize, [isize; K]) {
        (self.shape[0], std::array::from_fn(|k| self.st[k][0]))
    }
    #[inline(always)]
    pub fn runs(&self, lo: usize, hi: usize) -> Runs<'_, K> {
        Runs::new(self, lo, hi)
    }
}

/// Iterator over the inner runs of a flat range of a nest.
pub struct Runs<'a, const K: usize> {
    n: &'a Nest<K>,
    pos: usize,
    hi: usize,
    c: [usize; MAXD],
    off: [isize; K], // offset of coords c (all dims, incl. the innermost)
}

impl<'a, const K: usize> Runs<'a, K> {
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // d and k index the coords, shape and strides in step
    fn new(n: &'a Nest<K>, lo: usize, hi: usize) -> Self {
        let mut c = [0usize; MAXD];
        let mut off = [0isize; K];
        if n.total == 0 || lo >= n.total {
            return Runs {
                n,
                pos: 0,
                hi: 0,
                c,
                off,
            };
        }
        let mut rest = lo;
        for d in 0..n.nd.max(1) {
            let size = n.shape[d];
            c[d] = rest % size;
            rest /= size;
            for k in 0..K {
                off[k] += c[d] as isize * n.st[k][d];
            }
        }
        Runs {
            n,
            pos: lo,
            hi: hi.min(n.total),
            c,
            off,
        }
    }
    /// next run: (element offset per view, length); None when done
    #[inline(always)]
    pub fn next_run(&mut self) -> Option<([isize; K], usize)> {
        if self.pos >= self.hi {
            return None;
        }
        let n = self.n;
        let len = (n.shape[0] - self.c[0]).min(self.hi - self.pos);
        let out = self.off;
        self.pos += len;
        // advance: innermost back to 0, carry into the outer dims
        for k in 0..K {
            self.off[k] -= self.c[0] as isize * n.st[k][0];
        }
        self.c[0] = 0;
        let mut d = 1;
        while d < n.nd {
            self.c[d] += 1;
            for k in 0..K {
                self.off[k] += n.st[k][d];
            }
            if self.c[d] < n.shape[d] {
                break;
            }
            for k in 0..K {
                self.off[k] -= n.shape[d] as isize * n.st[k][d];
            }
            self.c[d] = 0;
            d += 1;
        }
        Some((out, len))
    }
}

/// Split `total` items into at most `max_tasks` chunks of at least `min_chunk`
/// (aligned to `align`); returns the number of chunks.
pub fn split_count(total: usize, max_tasks: usize, min_chunk: usize) -> usize {
    if total == 0 {
        return 0;
    }
    (total / min_chunk.max(1)).clamp(1, max_tasks.max(1))
}

/// Pool tasks for `total` items over `threads`: as many threads as get `min_chunk` each
/// (`split_count`), then `TASKS_PER_THREAD` tasks per thread (whole items: at most
/// `total`), claimed as threads come free. A helper that wakes late or shares its core
/// with another process then takes fewer tasks, where with one task per thread the
/// caller waited for its half (docs/perf/simd_kernel_rows.md).
pub fn split_tasks(total: usize, threads: usize, min_chunk: usize) -> usize {
    match split_count(total, threads, min_chunk) {
        t if t > 1 => (t * crate::runtime::TASKS_PER_THREAD).min(total),
        t => t,
    }
}

/// bounds of chunk `t` of `parts` over `total`, aligned to `align`
#[inline]
pub fn chunk(total: usize, parts: usize, t: usize, align: usize) -> (usize, usize) {
    let per = total.div_ceil(parts).div_ceil(align) * align;
    let lo = (t * per).min(total);
    let hi = ((t + 1) * per).min(total);
    (lo, hi)
}

/// Every view of `v` (named by `names`, in order) has v[0]'s dtype, and it is f32 or f64:
/// the rule of the fused float ops (adam_update, lstm_cell / lstm_cell_grad).
pub fn one_float_dtype(v: &[Arr], names: &[&str]) -> Result<(), String> {
    for (x, name) in v.iter().zip(names) {
        if x.dtype != v[0].dtype || !matches!(x.dtype, DType::F32 | DType::F64) {
            return Err(format!(
                "{name} has dtype {}, out {} (f32 or f64, all alike)",
                x.dtype.name(),
                v[0].dtype.name()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nest_merges_contiguous_dims_and_walks_ranges() {
        // (2, 3, 4) contiguous + broadcast of a (3, 1) column
        let n = Nest::<2>::new(&[2, 3, 4], [&[12, 4, 1], &[0, 1, 0]]);
        assert_eq!(n.total, 24);
        let mut seen = vec![];
        for (lo, hi) in [(0, 5), (5, 24)] {
            let mut r = n.runs(lo, hi);
            while let Some((off, len)) = r.next_run() {
                for i in 0..len {
                    seen.push((
                        off[0] + i as isize * n.st[0][0],
                        off[1] + i as isize * n.st[1][0],
                    ));
                }
            }
        }
        let want: Vec<_> = (0..24)
            .map(|i| (i as isize, ((i / 4) % 3) as isize))
            .collect();
        assert_eq!(seen, want);
        let c = Nest::<1>::new(&[4, 5, 6], [&[30, 6, 1]]);
        assert_eq!((c.nd, c.shape[0]), (1, 120));
    }
}
