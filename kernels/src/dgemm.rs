//! float64 matmul (a dgemm): matmul.rs's BLIS structure with an f64 microkernel.
//!
//! The K slice of B is packed into NR-column micro-panels (KC x NCB, L2), the M block of
//! A into MR-row micro-panels (MCA x KC), zero-padded at the edges; the microkernel keeps
//! an MR x NR tile of C in registers, one FMA per (row, vector) per k, the A element
//! broadcast from the packed panel. Tiles: AVX-512 12 x 16 (2 zmm of 8 f64: 24
//! accumulators of 32 registers), AVX2 + FMA 6 x 8 (2 ymm of 4: 12 of 16), scalar 4 x 2
//! (NEON and machines without AVX2 take the scalar tile). Threads: matmul.rs's
//! `Split::plan` (the batch, or M / N in whole micro-tiles) over the pool.

use core::cell::RefCell;

use crate::arch::{active, Isa};
use crate::matmul::{Batches, Blocking, Split, HANDOFF_CYCLES, PART_FMA_CYCLES};
use crate::runtime::{KResult, Pool};
use crate::view::Arr;

/// an f64 vector of one ISA (only called inside functions compiled for it)
trait DSimd: Copy {
    type V: Copy;
    const W: usize;
    const MR: usize;
    /// vectors per tile row (NR = NV W columns)
    const NV: usize;
    unsafe fn zero() -> Self::V;
    unsafe fn splat(x: f64) -> Self::V;
    unsafe fn load(p: *const f64) -> Self::V;
    unsafe fn store(p: *mut f64, v: Self::V);
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// a hint that the line at `p` is read soon (x86: prefetcht0; elsewhere nothing)
    #[inline(always)]
    unsafe fn prefetch(_p: *const f64) {}
}

#[derive(Clone, Copy)]
struct Scalar;
impl DSimd for Scalar {
    type V = f64;
    const W: usize = 1;
    const MR: usize = 4;
    const NV: usize = 2;
    #[inline(always)]
    unsafe fn zero() -> f64 {
        0.0
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> f64 {
        *p
    }
    #[inline(always)]
    unsafe fn store(p: *mut f64, v: f64) {
        *p = v
    }
    #[inline(always)]
    unsafe fn fma(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
    #[inline(always)]
    unsafe fn add(a: f64, b: f64) -> f64 {
        a + b
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::DSimd;
    use core::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub struct Avx512;
    impl DSimd for Avx512 {
        type V = __m512d;
        const W: usize = 8;
        const MR: usize = 8;
        const NV: usize = 3;
        #[inline(always)]
        unsafe fn zero() -> __m512d {
            _mm512_setzero_pd()
        }
        #[inline(always)]
        unsafe fn splat(x: f64) -> __m512d {
            _mm512_set1_pd(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m512d {
            _mm512_loadu_pd(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m512d) {
            _mm512_storeu_pd(p, v)
        }
        #[inline(always)]
        unsafe fn fma(a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            _mm512_fmadd_pd(a, b, c)
        }
        #[inline(always)]
        unsafe fn add(a: __m512d, b: __m512d) -> __m512d {
            _mm512_add_pd(a, b)
        }
        #[inline(always)]
        unsafe fn prefetch(p: *const f64) {
            _mm_prefetch::<_MM_HINT_T0>(p as *const i8)
        }
    }

    #[derive(Clone, Copy)]
    pub struct Avx2;
    impl DSimd for Avx2 {
        type V = __m256d;
        const W: usize = 4;
        const MR: usize = 6;
        const NV: usize = 2;
        #[inline(always)]
        unsafe fn zero() -> __m256d {
            _mm256_setzero_pd()
        }
        #[inline(always)]
        unsafe fn splat(x: f64) -> __m256d {
            _mm256_set1_pd(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m256d {
            _mm256_loadu_pd(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m256d) {
            _mm256_storeu_pd(p, v)
        }
        #[inline(always)]
        unsafe fn fma(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            _mm256_fmadd_pd(a, b, c)
        }
        #[inline(always)]
        unsafe fn add(a: __m256d, b: __m256d) -> __m256d {
            _mm256_add_pd(a, b)
        }
        #[inline(always)]
        unsafe fn prefetch(p: *const f64) {
            _mm_prefetch::<_MM_HINT_T0>(p as *const i8)
        }
    }
}

/// the blocking of a tile of `mr` x 2 vectors of `w` f64 on this machine's caches
fn blocking(w: usize, nv: usize, mr: usize) -> Blocking {
    let c = crate::cpuinfo::caches();
    let nr = nv * w;
    // a K slice of 256: the B micro-panel (256 x NR) streams from L2 beside the A one in
    // L1 (matmul.rs KC_MIN: the same bytes per B row as the f32 kernel's)
    let kc = 256;
    let l2 = c.l2.size / c.l2.shared_by.max(1);
    let ncb = (l2 / 2 / (kc * 8) / nr * nr).clamp(2 * nr, 4096 / nr * nr);
    let l3 = c.l3.map_or(8 * l2, |l3| l3.size);
    let mca = (l3 / 2 / (kc * 8) / mr * mr).clamp(8 * mr, 4096 / mr * mr);
    Blocking {
        mr,
        nr,
        kc,
        ncb,
        mca,
        small_bytes: 0,
        // (matmul.rs's rules: W f64 lanes x 2 FMA pipes multiply-add per cycle)
        par_min_macs: HANDOFF_CYCLES * 2 * w,
        min_part: PART_FMA_CYCLES * 2 * w,
    }
}

/// the blocking of the active ISA's f64 tile
pub fn active_blocking() -> Blocking {
    match active() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => blocking(x86::Avx512::W, x86::Avx512::NV, x86::Avx512::MR),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => blocking(x86::Avx2::W, x86::Avx2::NV, x86::Avx2::MR),
        _ => blocking(Scalar::W, Scalar::NV, Scalar::MR),
    }
}

/// one product: C (m x n, rows ldc apart) = A (m x k) @ B (k x n), any strides
#[derive(Clone, Copy)]
struct G {
    m: usize,
    n: usize,
    k: usize,
    a: *const f64,
    ars: isize,
    acs: isize,
    b: *const f64,
    brs: isize,
    bcs: isize,
    c: *mut f64,
    ldc: usize,
    blk: Blocking,
}

thread_local! {
    static PACK: RefCell<(Vec<f64>, Vec<f64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// # Safety
/// `a`: MR x kc packed (a[p MR + i]), `b`: kc x NR packed, `c` an MR x NR tile, rows ldc
/// apart (first: overwrite, else add)
#[inline(always)]
#[allow(clippy::needless_range_loop)] // v indexes the row's accumulators and B's vectors
unsafe fn micro<S: DSimd, const MR: usize, const NV: usize>(
    kc: usize,
    a: *const f64,
    b: *const f64,
    c: *mut f64,
    ldc: usize,
    first: bool,
) {
    let nr = S::NV * S::W;
    // the C tile's lines are loaded at the end: ask for them now (they are cold in L1 /
    // L2 once per K slice), while the K loop runs
    for i in 0..MR {
        S::prefetch(c.add(i * ldc));
        S::prefetch(c.add(i * ldc + nr - 1));
    }
    let mut acc = [[S::zero(); NV]; MR];
    for p in 0..kc {
        let bv: [S::V; NV] = core::array::from_fn(|v| S::load(b.add(p * nr + v * S::W)));
        let ap = a.add(p * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let av = S::splat(*ap.add(i));
            for v in 0..NV {
                row[v] = S::fma(av, bv[v], row[v]);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        let cp = c.add(i * ldc);
        for (v, &x) in row.iter().enumerate() {
            let q = cp.add(v * S::W);
            S::store(q, if first { x } else { S::add(S::load(q), x) });
        }
    }
}

/// Pack `len` lines of `kb` elements (A's rows, B's columns) into panels of `r` lines,
/// element-interleaved: panel q holds line q r + i's element p at `q kb r + p r + i`, the
/// lines past `len` zero. Line i's element p is at `src + i line_step + p elem_step`;
/// lines one element apart (a row-major B) are copied a row of the panel at a time.
///
/// # Safety
/// `dst` holds `len.div_ceil(r) * r * kb` f64; the lines lie in `src`'s matrix
#[inline(always)]
unsafe fn pack_panels(
    dst: *mut f64,
    src: *const f64,
    len: usize,
    kb: usize,
    r: usize,
    line_step: isize,
    elem_step: isize,
) {
    for q in 0..len.div_ceil(r) {
        let panel = dst.add(q * kb * r);
        let first = src.offset((q * r) as isize * line_step);
        let h = r.min(len - q * r);
        for p in 0..kb {
            let (from, to) = (first.offset(p as isize * elem_step), panel.add(p * r));
            if line_step == 1 {
                core::ptr::copy_nonoverlapping(from, to, h);
            } else {
                for i in 0..h {
                    *to.add(i) = *from.offset(i as isize * line_step);
                }
            }
            for i in h..r {
                *to.add(i) = 0.0;
            }
        }
    }
}

/// # Safety
/// the matrices of `g` at their strides
#[inline(always)]
unsafe fn gemm<S: DSimd, const MR: usize, const NV: usize>(g: G) {
    let G { m, n, k, .. } = g;
    let nr = NV * S::W;
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for i in 0..m {
            std::slice::from_raw_parts_mut(g.c.add(i * g.ldc), n).fill(0.0);
        }
        return;
    }
    let (kc, ncb, mca) = (g.blk.kc, g.blk.ncb, g.blk.mca);
    PACK.with(|bufs| {
        let mut bufs = bufs.borrow_mut();
        let (ap, bp) = &mut *bufs;
        let need_b = kc * ncb.min(n.div_ceil(nr) * nr);
        let need_a = kc * mca.min(m.div_ceil(MR) * MR);
        if bp.len() < need_b {
            bp.resize(need_b, 0.0);
        }
        if ap.len() < need_a {
            ap.resize(need_a, 0.0);
        }
        let mut tile = [0f64; 16 * 16];
        // A's M block is packed once per K slice and reused by every B block (the f32
        // GEMM's loop order): packed per B block instead, A was packed n / ncb times
        // (16 times at 2048^3 on AVX2, whose L2 holds 128 columns), ~1 copy per 16 FMAs
        for ic in (0..m).step_by(mca) {
            let mb = mca.min(m - ic);
            let mpanels = mb.div_ceil(MR);
            for pc in (0..k).step_by(kc) {
                let kb = kc.min(k - pc);
                let a0 = g.a.offset(ic as isize * g.ars + pc as isize * g.acs);
                pack_panels(ap.as_mut_ptr(), a0, mb, kb, MR, g.ars, g.acs);
                for jc in (0..n).step_by(ncb) {
                    let nb = ncb.min(n - jc);
                    let npanels = nb.div_ceil(nr);
                    // B[pc.., jc..]'s columns are the lines: panel jp holds kb rows of nr
                    let b0 = g.b.offset(pc as isize * g.brs + jc as isize * g.bcs);
                    pack_panels(bp.as_mut_ptr(), b0, nb, kb, nr, g.bcs, g.brs);
                    // (the A micro-panel stays in L1 while the B block streams from L2)
                    for ip in 0..mpanels {
                        let i0 = ic + ip * MR;
                        let h = MR.min(m - i0);
                        let apan = ap.as_ptr().add(ip * kb * MR);
                        for jp in 0..npanels {
                            let j0 = jc + jp * nr;
                            let w = nr.min(n - j0);
                            let bpan = bp.as_ptr().add(jp * kb * nr);
                            let c = g.c.add(i0 * g.ldc + j0);
                            if h == MR && w == nr {
                                micro::<S, MR, NV>(kb, apan, bpan, c, g.ldc, pc == 0);
                            } else {
                                micro::<S, MR, NV>(kb, apan, bpan, tile.as_mut_ptr(), nr, true);
                                for ii in 0..h {
                                    for jj in 0..w {
                                        let cp = c.add(ii * g.ldc + jj);
                                        let v = tile[ii * nr + jj];
                                        *cp = if pc == 0 { v } else { *cp + v };
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn gemm_avx512(g: G) {
    gemm::<x86::Avx512, 8, 3>(g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gemm_avx2(g: G) {
    gemm::<x86::Avx2, 6, 2>(g)
}

/// # Safety
/// the matrices of `g` at their strides; `g.blk` the blocking of `isa`'s tile
unsafe fn run(isa: Isa, g: G) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => gemm_avx512(g),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => gemm_avx2(g),
        _ => gemm::<Scalar, 4, 2>(g),
    }
}

/// out (B, M, N) = a (B, M, K) @ b (B, K, N) in float64, or with two batch dims (as
/// matmul.rs's `matmul`)
pub fn matmul(pool: &Pool, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    let bt = Batches::of(a, b);
    let Batches { nb, m, k, n, d, .. } = bt;
    if nb == 0 {
        return Ok(());
    }
    let isa = active();
    let blk = active_blocking();
    let Split {
        tasks,
        by_batch,
        split_n,
        parts,
    } = Split::plan(nb, m, n, k, pool.threads(), &blk, false, false);
    let (len, align) = if split_n { (n, blk.nr) } else { (m, blk.mr) };
    let (ap, bp, cp) = (a.d() as usize, b.d() as usize, out.d() as usize);
    let (ars, acs, brs, bcs) = (a.st[d + 1], a.st[d + 2], b.st[d + 1], b.st[d + 2]);
    let one = |bi: usize, part: usize| {
        let (lo, hi) = if parts == 1 {
            (0, len)
        } else {
            crate::view::chunk(len, parts, part, align)
        };
        if lo >= hi {
            return;
        }
        let a0 = (ap as *const f64).wrapping_offset(bt.a_offset(bi));
        let b0 = (bp as *const f64).wrapping_offset(bt.b_offset(bi));
        let c0 = (cp as *mut f64).wrapping_add(bi * m * n);
        let (mm, nn, a_off, b_off, c_off) = if split_n {
            (m, hi - lo, 0, lo as isize * bcs, lo)
        } else {
            (hi - lo, n, lo as isize * ars, 0, lo * n)
        };
        let g = G {
            m: mm,
            n: nn,
            k,
            a: a0.wrapping_offset(a_off),
            ars,
            acs,
            b: b0.wrapping_offset(b_off),
            brs,
            bcs,
            c: c0.wrapping_add(c_off),
            ldc: n,
            blk,
        };
        // SAFETY: the record's views were validated: this part's rows / columns of a, b and
        // out lie inside them; tasks write disjoint parts of out
        unsafe { run(isa, g) };
    };
    if by_batch {
        pool.run(tasks, &|t| {
            let (lo, hi) = crate::view::chunk(nb, tasks, t, 1);
            for bi in lo..hi {
                one(bi, 0);
            }
        });
    } else {
        pool.run(tasks, &|t| one(t / parts, t % parts));
    }
    Ok(())
}

/// out (contiguous rows of N) += bias (N,): matmul_bias's second pass in float64
pub fn add_bias(out: &Arr, bias: &Arr) -> KResult {
    let n = bias.shape[0];
    let rows = out.numel().checked_div(n).unwrap_or(0);
    for r in 0..rows {
        for j in 0..n {
            // SAFETY: out holds rows x n contiguous f64, bias n f64 bias.st[0] apart
            unsafe { *out.d().add(r * n + j) += *bias.d().offset(j as isize * bias.st[0]) };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dgemm_matches_reference_every_isa_and_layout() {
        let isas: Vec<Isa> = Isa::all_supported();
        for &(m, n, k) in &[
            (1, 1, 1),
            (13, 17, 5),
            (37, 29, 300),
            (64, 48, 513),
            (3, 70, 0),
            (50, 300, 600),
        ] {
            let a: Vec<f64> = (0..m * k)
                .map(|i| ((i * 7 % 13) as f64 - 6.0) / 3.0)
                .collect();
            let b: Vec<f64> = (0..k * n)
                .map(|i| ((i * 5 % 11) as f64 - 5.0) / 7.0)
                .collect();
            let mut want = vec![0f64; m * n];
            for i in 0..m {
                for j in 0..n {
                    want[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                }
            }
            for &isa in &isas {
                let (w, nv, mr) = match isa {
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx512 => (x86::Avx512::W, x86::Avx512::NV, x86::Avx512::MR),
                    #[cfg(target_arch = "x86_64")]
                    Isa::Avx2 => (x86::Avx2::W, x86::Avx2::NV, x86::Avx2::MR),
                    _ => (Scalar::W, Scalar::NV, Scalar::MR),
                };
                // row-major b, and b read transposed from a column-major copy
                let bt: Vec<f64> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
                // the machine's blocking, and one of 2 micro-panels each way (every loop
                // of gemm runs more than once: M blocks, K slices, N blocks)
                let machine = blocking(w, nv, mr);
                let tiny = Blocking {
                    ncb: 2 * machine.nr,
                    mca: 2 * mr,
                    ..machine
                };
                for (bptr, brs, bcs, blk) in [
                    (b.as_ptr(), n as isize, 1, machine),
                    (bt.as_ptr(), 1, k as isize, machine),
                    (b.as_ptr(), n as isize, 1, tiny),
                    (bt.as_ptr(), 1, k as isize, tiny),
                ] {
                    let mut c = vec![f64::NAN; m * n];
                    let g = G {
                        m,
                        n,
                        k,
                        a: a.as_ptr(),
                        ars: k as isize,
                        acs: 1,
                        b: bptr,
                        brs,
                        bcs,
                        c: c.as_mut_ptr(),
                        ldc: n,
                        blk,
                    };
                    // SAFETY: the vectors hold the matrices at these strides
                    unsafe { run(isa, g) };
                    for (x, y) in c.iter().zip(&want) {
                        assert!(
                            (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                            "{isa:?} {m}x{n}x{k}"
                        );
                    }
                }
            }
        }
    }
}
