//! Batched matmul C (B, M, N) = A (B, M, K) @ B (B, K, N), any operand strides.
//!
//! BLIS structure (Goto / van Zee), written for row-major C: the microkernel
//! multiplies an MR x KC micro-panel of A (the broadcast side) by a KC x NR
//! micro-panel of B (the vector side, NR = 2 vectors) into an MR x NR tile of
//! C held entirely in registers, one FMA per (row, vector) per k. Around it,
//! three cache levels: the A micro-panel stays in L1 while the innermost loop
//! streams B micro-panels from a packed KC x NCB block of B that stays in L2;
//! the packed MCA x KC panel of A stays in L3. Packing
//! is where strides go away: a transposed or strided operand is read through
//! its strides while it is packed, so there is never a separate copy.
//!
//! Microkernel: MR x 2W accumulators (W = lanes): AVX2 6 x 16 (12 of the 16
//! ymm registers), AVX-512 8 x 32 (16 of 32 zmm), NEON 8 x 8, scalar 4 x 2.
//! Blocking (KC, NCB, MCA) per ISA: see `blocking`; where each value comes from
//! (BLIS's Zen 3 values, a Sapphire Rapids sweep) is in docs/perf/simd_matmul.md.
//! Edge tiles (M % MR, N % NR) run the same kernel on zero-padded panels into
//! a scratch tile and copy back only the valid part.
//!
//! Narrow products (n <= 256) with a row-major A skip packing A: the
//! microkernel broadcasts from MR rows of A in place (packing A costs O(m k)
//! against O(m n k) of work). When m is small too (<= 256), B's row-major rows
//! are read in place as well: few A panels would reuse a packed B block. (The
//! measurements behind both limits: docs/perf/simd_matmul.md.)
//! Small path: below ~32^3 multiply-adds packing costs more than it saves;
//! such products run a direct loop (SIMD over N when B's rows are contiguous).
//! Threads: the batch, or else the larger of M and N (M when equal; in whole micro-tiles),
//! is cut into one task per thread; each task runs the blocked loops on its
//! own packing buffers (thread-local, reused across calls).

use std::cell::RefCell;

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool};
use crate::view::Arr;

/// (KC, NCB, MCA): depth of a K slice; columns of the packed B block (L2);
/// rows of the packed A panel (L3). NCB and MCA are multiples of NR and MR.
#[inline(always)]
fn blocking<S: Simd>() -> (usize, usize, usize) {
    match S::W {
        16 => (384, 480, 3072), // a sweep (docs/perf/simd_matmul.md)
        8 => (256, 144, 4080),  // BLIS's Zen 3 values
        4 => (256, 128, 4096),
        _ => (256, 64, 1024),
    }
}

/// a 2-D strided matrix
#[derive(Clone, Copy)]
struct Mat {
    p: *const f32,
    rs: isize,
    cs: isize,
}

impl Mat {
    #[inline(always)]
    fn new(p: *const f32, rs: isize, cs: isize) -> Mat {
        Mat { p, rs, cs }
    }
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> *const f32 {
        self.p.offset(i as isize * self.rs + j as isize * self.cs)
    }
}

/// Packing scratch, grown on demand, one per thread. Large buffers are
/// 2 MiB aligned and (on Linux) advised to use transparent huge pages: the
/// packed B panel is several MiB and streams through the TLB on every
/// micro-tile, which costs ~10% at 2048^3 with 4 KiB pages (measured).
struct Scratch {
    ptr: *mut f32,
    layout: Option<std::alloc::Layout>,
}

#[cfg(target_os = "linux")]
extern "C" {
    fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
}

impl Scratch {
    /// a buffer of at least n floats (contents unspecified: packing writes
    /// every element before the microkernel reads it)
    fn get(&mut self, n: usize) -> *mut f32 {
        const HUGE: usize = 2 << 20;
        let bytes = (n * 4).max(64);
        if self.layout.is_none_or(|l| l.size() < bytes) {
            self.release();
            let align = if bytes >= HUGE / 2 { HUGE } else { 64 };
            let size = bytes.div_ceil(align) * align;
            let layout = std::alloc::Layout::from_size_align(size, align).expect("scratch layout");
            // SAFETY: size > 0
            let p = unsafe { std::alloc::alloc(layout) };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            #[cfg(target_os = "linux")]
            if align == HUGE {
                // MADV_HUGEPAGE = 14, before the pages are touched; advice only
                unsafe { madvise(p as *mut _, size, 14) };
            }
            self.ptr = p as *mut f32;
            self.layout = Some(layout);
        }
        self.ptr
    }
    fn release(&mut self) {
        if let Some(l) = self.layout.take() {
            unsafe { std::alloc::dealloc(self.ptr as *mut u8, l) };
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.release();
    }
}

thread_local! {
    static PACK_A: RefCell<Scratch> = const { RefCell::new(Scratch { ptr: std::ptr::null_mut(), layout: None }) };
    static PACK_B: RefCell<Scratch> = const { RefCell::new(Scratch { ptr: std::ptr::null_mut(), layout: None }) };
}

/// Pack rows 0..len of `src` (each kc long) into r-row micro-panels, zero-padded:
/// panel p, k, i -> dst[p*r*kc + k*r + i]. A is packed as it is (r = MR); B as its
/// transpose (r = NR = 2W: panels of B's columns). Panels contiguous in memory
/// (rs == 1) are copied a vector at a time, rows contiguous (cs == 1) row by
/// row; anything else element by element. (`r` is a constant after inlining.)
#[inline(always)]
unsafe fn pack<S: Simd>(r: usize, len: usize, kc: usize, src: Mat, dst: *mut f32) {
    let w = S::W;
    let mut ir = 0;
    while ir < len {
        let rows = r.min(len - ir);
        let d = dst.add(ir * kc);
        if src.rs == 1 && rows == r && r.is_multiple_of(w) {
            for k in 0..kc {
                let s = src.at(ir, k);
                let mut v = 0;
                while v < r {
                    S::store(d.add(k * r + v), S::load(s.add(v)));
                    v += w;
                }
            }
        } else if src.cs == 1 {
            for i in 0..r {
                if i < rows {
                    let row = src.at(ir + i, 0);
                    for k in 0..kc {
                        *d.add(k * r + i) = *row.add(k);
                    }
                } else {
                    for k in 0..kc {
                        *d.add(k * r + i) = 0.0;
                    }
                }
            }
        } else {
            for k in 0..kc {
                for i in 0..r {
                    *d.add(k * r + i) = if i < rows { *src.at(ir + i, k) } else { 0.0 };
                }
            }
        }
        ir += r;
    }
}

/// C[MR x 2W] (+)= A micro-panel (kc x MR) * B micro-panel (kc x 2W).
///
/// A element (i, k) is at `a + i + k * MR` in a packed panel (PACKED), or at
/// `a + i * lda + k` in the rows of a row-major A read in place (see
/// gemm_blocked). A const parameter, so the packed loop keeps constant offsets.
/// B row k of the micro-panel starts at `b + k * ldb`: ldb = 2W when packed, B's
/// row stride when its rows are read in place.
#[inline(always)]
unsafe fn micro<S: Simd, const MR: usize, const PACKED: bool>(
    kc: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let w = S::W;
    let mut acc = [[S::zero(); 2]; MR];
    let (mut a, mut b) = (a, b);
    for _ in 0..kc {
        let b0 = S::load(b);
        let b1 = S::load(b.add(w));
        for i in 0..MR {
            let ai = S::splat(*a.add(if PACKED { i } else { i * lda }));
            acc[i][0] = S::fma(ai, b0, acc[i][0]);
            acc[i][1] = S::fma(ai, b1, acc[i][1]);
        }
        a = a.add(if PACKED { MR } else { 1 });
        b = b.add(ldb);
    }
    for i in 0..MR {
        let row = c.add(i * ldc);
        if accumulate {
            S::store(row, S::add(S::load(row), acc[i][0]));
            S::store(row.add(w), S::add(S::load(row.add(w)), acc[i][1]));
        } else {
            S::store(row, acc[i][0]);
            S::store(row.add(w), acc[i][1]);
        }
    }
}

/// widest product whose A is read in place rather than packed (see gemm_blocked)
const DIRECT_A_MAX_N: usize = 256;
/// tallest product whose B is read in place too (see gemm_blocked): up to here
/// few A panels would reuse a packed B block (measured: docs/perf/simd_matmul.md)
const DIRECT_B_MAX_M: usize = 256;

/// one product, one thread, blocked: C[m x n] (ldc) = A[m x k] @ B[k x n]
///
/// Loop order (BLIS, transposed to row-major C): the A micro-panel is the
/// broadcast side and stays in L1 across the innermost loop, which streams
/// B micro-panels out of the packed KC x NCB block of B held in L2; the packed
/// MCA x KC panel of A sits in L3.
#[inline(always)]
unsafe fn gemm_blocked<S: Simd, const MR: usize>(g: GemmK) {
    let GemmK {
        m,
        n,
        k,
        a,
        b,
        c,
        ldc,
    } = g;
    let nr = 2 * S::W;
    let (kcb, ncb, mca) = blocking::<S>();
    // cut N into equal blocks (whole micro-panels) rather than full blocks and a sliver:
    // a thread's half of 1024 is 2 x 256, not 480 + 32 (a sliver streams all of A for
    // a few columns)
    let ncb = n
        .div_ceil(n.div_ceil(ncb))
        .next_multiple_of(nr)
        .min(ncb.max(nr));
    let pa = PACK_A.with(|s| s.borrow_mut().get(mca.div_ceil(MR) * MR * kcb));
    let pb = PACK_B.with(|s| s.borrow_mut().get(kcb * ncb.div_ceil(nr) * nr));
    let mut tile = [0f32; 16 * 32];
    let mut ic = 0;
    while ic < m {
        let mc = mca.min(m - ic);
        let mut pc = 0;
        while pc < k {
            let kc = kcb.min(k - pc);
            // A row-major A in whole MR-row panels is read in place when n is small:
            // packing A costs O(m k) against O(m n k) of work; for wide products the MR
            // rows read in place (often 4 KiB apart: one L1 set) lose to the packed
            // panel (docs/perf/simd_matmul.md)
            let direct = a.cs == 1 && a.rs > 0 && mc % MR == 0 && n <= DIRECT_A_MAX_N;
            if !direct {
                pack::<S>(MR, mc, kc, Mat::new(a.at(ic, pc), a.rs, a.cs), pa);
            }
            let mut jc = 0;
            while jc < n {
                let nc = ncb.min(n - jc);
                // B's rows are read in place too when few A panels would reuse the packed
                // block (m small): packing B costs O(k n) against O(m n k) of work
                let direct_b = direct
                    && b.cs == 1
                    && b.rs > 0
                    && nc % nr == 0
                    && (m <= DIRECT_B_MAX_M / 2 || (m <= DIRECT_B_MAX_M && k <= kcb));
                if !direct_b {
                    // B's columns are the rows of its transpose
                    pack::<S>(nr, nc, kc, Mat::new(b.at(pc, jc), b.cs, b.rs), pb);
                }
                let mut ir = 0;
                while ir < mc {
                    let mm = MR.min(mc - ir);
                    let ap = if direct {
                        a.at(ic + ir, pc)
                    } else {
                        pa.add(ir * kc) as *const f32
                    };
                    let lda = a.rs as usize;
                    let mut jr = 0;
                    while jr < nc {
                        let nn = nr.min(nc - jr);
                        let (bp, ldb) = if direct_b {
                            (b.at(pc, jc + jr), b.rs as usize)
                        } else {
                            (pb.add(jr * kc) as *const f32, nr)
                        };
                        let cp = c.add((ic + ir) * ldc + jc + jr);
                        let (c_to, ldc_to, acc_to) = if mm == MR && nn == nr {
                            (cp, ldc, pc > 0)
                        } else {
                            (tile.as_mut_ptr(), nr, false) // an edge tile: via scratch
                        };
                        if direct {
                            micro::<S, MR, false>(kc, ap, lda, bp, ldb, c_to, ldc_to, acc_to);
                        } else {
                            micro::<S, MR, true>(kc, ap, lda, bp, ldb, c_to, ldc_to, acc_to);
                        }
                        if !(mm == MR && nn == nr) {
                            for i in 0..mm {
                                for j in 0..nn {
                                    let d = cp.add(i * ldc + j);
                                    let v = tile[i * nr + j];
                                    *d = if pc > 0 { *d + v } else { v };
                                }
                            }
                        }
                        jr += nr;
                    }
                    ir += MR;
                }
                jc += ncb;
            }
            pc += kcb;
        }
        ic += mca;
    }
}

/// direct loop for tiny products: C row i = sum_k A[i,k] * B row k
#[inline(always)]
unsafe fn gemm_small<S: Simd>(g: GemmK) {
    let GemmK {
        m,
        n,
        k,
        a,
        b,
        c,
        ldc,
    } = g;
    let w = S::W;
    for i in 0..m {
        let crow = c.add(i * ldc);
        let mut j = 0;
        if b.cs == 1 {
            while j + w <= n {
                let mut acc = S::zero();
                for kk in 0..k {
                    acc = S::fma(S::splat(*a.at(i, kk)), S::load(b.at(kk, j)), acc);
                }
                S::store(crow.add(j), acc);
                j += w;
            }
        }
        while j < n {
            let mut acc = 0f32;
            for kk in 0..k {
                acc += *a.at(i, kk) * *b.at(kk, j);
            }
            *crow.add(j) = acc;
            j += 1;
        }
    }
}

/// one product: C[m x n] (row stride ldc) = A[m x k] @ B[k x n]
#[derive(Clone, Copy)]
struct GemmK {
    m: usize,
    n: usize,
    k: usize,
    a: Mat,
    b: Mat,
    c: *mut f32,
    ldc: usize,
}
unsafe impl Send for GemmK {}
unsafe impl Sync for GemmK {}

pub const SMALL: usize = 32 * 32 * 32;

impl Kernel for GemmK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let GemmK {
            m, n, k, c, ldc, ..
        } = self;
        unsafe {
            if m == 0 || n == 0 {
                return;
            }
            if k == 0 {
                for i in 0..m {
                    std::slice::from_raw_parts_mut(c.add(i * ldc), n).fill(0.0);
                }
                return;
            }
            if m * n * k <= SMALL {
                gemm_small::<S>(self);
                return;
            }
            match S::MR {
                12 => gemm_blocked::<S, 12>(self),
                8 => gemm_blocked::<S, 8>(self),
                6 => gemm_blocked::<S, 6>(self),
                _ => gemm_blocked::<S, 4>(self),
            }
        }
    }
}

/// below this many multiply-adds a product runs on one thread
pub const PAR_MIN_MACS: usize = 1 << 18;

pub fn matmul(pool: &Pool, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    let (nb, m, k, n) = (a.shape[0], a.shape[1], a.shape[2], b.shape[2]);
    if nb == 0 {
        return Ok(());
    }
    let (mr, nr) = crate::arch::dispatch(Tile);
    let threads = pool.threads();
    let macs = nb * m * n * k;
    // many products: one task per thread, each a range of the batch;
    // few: cut the larger of M and N of each product into whole micro-tiles
    let by_batch = nb >= threads || macs < PAR_MIN_MACS || threads == 1;
    // M when square: the threads then pack disjoint A panels and share the B blocks
    // (measured: docs/perf/simd_matmul.md)
    let split_n = n > m;
    let (len, align) = if split_n { (n, nr) } else { (m, mr) };
    let parts = if by_batch {
        1
    } else {
        threads.min(len.div_ceil(align)).max(1)
    };
    let batch_tasks = if by_batch && macs >= PAR_MIN_MACS {
        threads.min(nb)
    } else {
        1
    };
    let ntasks = if by_batch { batch_tasks } else { nb * parts };
    let (ap, bp, cp) = (a.f() as usize, b.f() as usize, out.f() as usize);
    let (asd, bsd) = (a.st, b.st);
    let one = |bi: usize, part: usize| {
        let (lo, hi) = if parts == 1 {
            (0, len)
        } else {
            crate::view::chunk(len, parts, part, align)
        };
        if lo >= hi && len > 0 {
            return;
        }
        let a0 = (ap as *const f32).wrapping_offset(bi as isize * asd[0]);
        let b0 = (bp as *const f32).wrapping_offset(bi as isize * bsd[0]);
        let c0 = (cp as *mut f32).wrapping_add(bi * m * n);
        // this task's part: columns lo..hi of C (split_n) or rows lo..hi
        let (mm, nn, a_off, b_off, c_off) = if split_n {
            (m, hi - lo, 0, lo as isize * bsd[2], lo)
        } else {
            (hi - lo, n, lo as isize * asd[1], 0, lo * n)
        };
        let g = GemmK {
            m: mm,
            n: nn,
            k,
            a: Mat::new(a0.wrapping_offset(a_off), asd[1], asd[2]),
            b: Mat::new(b0.wrapping_offset(b_off), bsd[1], bsd[2]),
            c: c0.wrapping_add(c_off),
            ldc: n,
        };
        dispatch(g);
    };
    if by_batch {
        pool.run(ntasks, &|t| {
            let (lo, hi) = crate::view::chunk(nb, ntasks, t, 1);
            for bi in lo..hi {
                one(bi, 0);
            }
        });
    } else {
        pool.run(ntasks, &|t| one(t / parts, t % parts));
    }
    Ok(())
}

/// single-threaded product of contiguous matrices (benchmarks, tests)
pub fn sgemm_st(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    dispatch(GemmK {
        m,
        n,
        k,
        a: Mat::new(a.as_ptr(), k as isize, 1),
        b: Mat::new(b.as_ptr(), n as isize, 1),
        c: c.as_mut_ptr(),
        ldc: n,
    });
}

struct Tile;
impl Kernel for Tile {
    type Out = (usize, usize);
    fn run<S: Simd>(self) -> (usize, usize) {
        (S::MR, 2 * S::W)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa};

    fn reference(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        ars: usize,
        acs: usize,
        b: &[f32],
        brs: usize,
        bcs: usize,
    ) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|p| a[i * ars + p * acs] as f64 * b[p * brs + j * bcs] as f64)
                    .sum();
            }
        }
        c
    }

    #[test]
    fn gemm_matches_reference_every_isa_and_layout() {
        let sizes = [
            (1, 1, 1),
            (3, 5, 7),
            (13, 37, 29),
            (40, 40, 40),
            (70, 33, 300),
            (200, 50, 17),
            (25, 300, 520),
            (48, 64, 45),   // whole tiles: A and B read in place (small m)
            (96, 128, 700), // the same over two K slices (accumulating)
            (240, 96, 100),
            (20, 1000, 40), // N cut into equal blocks, an edge tile in the last
        ];
        for isa in Isa::all_supported() {
            for &(m, n, k) in &sizes {
                let a: Vec<f32> = (0..m * k)
                    .map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.25)
                    .collect();
                let b: Vec<f32> = (0..k * n)
                    .map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.5)
                    .collect();
                for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                    let (ars, acs) = if ta { (1, m) } else { (k, 1) };
                    let (brs, bcs) = if tb { (1, k) } else { (n, 1) };
                    let want = reference(m, n, k, &a, ars, acs, &b, brs, bcs);
                    let mut c = vec![f32::NAN; m * n];
                    dispatch_on(
                        isa,
                        GemmK {
                            m,
                            n,
                            k,
                            a: Mat::new(a.as_ptr(), ars as isize, acs as isize),
                            b: Mat::new(b.as_ptr(), brs as isize, bcs as isize),
                            c: c.as_mut_ptr(),
                            ldc: n,
                        },
                    );
                    for (x, y) in c.iter().zip(&want) {
                        assert!(
                            (*x as f64 - y).abs() <= 1e-4 * (1.0 + y.abs()),
                            "{isa:?} {m}x{n}x{k} {ta} {tb}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }
}
