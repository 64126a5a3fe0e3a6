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
//! Blocking (KC, NCB, MCA) is derived on the machine it runs on, from the caches
//! `cpuinfo` reads (CPUID / sysfs) and the ISA's tile: `Blocking::derive` (a pure
//! function, unit-tested on other CPUs' caches; `tk_describe` reports the result).
//! Edge tiles (M % MR, N % NR) run the same kernel on zero-padded panels into
//! a scratch tile and copy back only the valid part.
//!
//! Narrow products (n <= 256) with a row-major A skip packing A (all but a last
//! partial MR-row panel): the microkernel broadcasts from MR rows of A in place
//! (packing A costs O(m k) against O(m n k) of work). When m is small too
//! (<= 256), B's row-major rows are read in place as well: few A panels would
//! reuse a packed B block. (The measurements behind both limits:
//! docs/perf/simd_matmul.md.)
//! Small path: a product whose operands fit in half of L1 runs a direct loop (SIMD
//! over N when B's rows are contiguous): packing would cost as much as it saves.
//! Threads (`Split::plan`): only as many as get `par_min_macs` of work each; the batch,
//! or else the larger of M and N (M when equal; N where that lets every part read A in
//! place; in whole micro-tiles), is cut into parts the pool's threads claim; each task
//! runs the blocked loops on its own packing buffers (thread-local, reused across calls).

use std::cell::RefCell;

use crate::arch::{dispatch, Kernel, Simd};
use crate::cpuinfo::Caches;
use crate::runtime::{KResult, Pool};
use crate::view::Arr;

/// The blocking of one ISA on this machine, derived from its caches (`derive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// microkernel tile: MR rows (the ISA's const) x NR = 2 vectors
    pub mr: usize,
    pub nr: usize,
    /// depth of a K slice (the A micro-panel MR x KC stays in L1)
    pub kc: usize,
    /// columns of the packed KC x NCB block of B (L2); a multiple of NR
    pub ncb: usize,
    /// rows of the packed MCA x KC panel of A (this core's share of L3); a multiple of MR
    pub mca: usize,
    /// products whose three operands fit in this many bytes run the direct loop
    pub small_bytes: usize,
    /// a product is cut over threads only where each gets at least this many
    /// multiply-adds (see `HANDOFF_CYCLES`)
    pub par_min_macs: usize,
    /// the fewest rows (columns) of one thread's part of a product (see `PART_FMA_CYCLES`)
    pub min_part: usize,
}

// The microkernel shape per vector width (arch/*: MR rows x 2 vectors): MR x 2
// accumulators + 2 B vectors + 1 broadcast must fit the vector registers (AVX2 has 16,
// AVX-512 and NEON 32), checked when the crate compiles.
#[cfg(target_arch = "x86_64")]
const _: () = assert!(
    2 * crate::arch::avx2::Avx2::MR + 3 <= 16 && 2 * crate::arch::avx512::Avx512::MR + 3 <= 32
);
#[cfg(target_arch = "aarch64")]
const _: () = assert!(2 * crate::arch::neon::Neon::MR + 3 <= 32);

/// parts of one product per thread (see `Split::plan`)
pub use crate::runtime::TASKS_PER_THREAD;
/// A part of a product (`Split::plan`) packs the whole other operand again (k x n floats
/// for a part of m rows) and then makes m multiply-adds per float it packed: m / 2W cycles
/// of both FMA pipes. Packing a float (a strided read from L3, a write to L2, both cores
/// at once) costs about half such a cycle, so a part gets at least PART_FMA_CYCLES of
/// them per packed float (min_part = 8 x 2W rows: re-packing ~6% of the part) while a
/// 1024-row product still has 2 parts per thread to balance. Measured on Zen 4 (AVX-512,
/// W 16), 1024^3 on 2 threads: parts of 128 rows (4 cycles, re-packing ~12%) vs 256
/// (8 cycles): +7% in paired rounds with KC 160, +2% with KC 256 (docs/perf/simd_matmul.md).
pub const PART_FMA_CYCLES: usize = 8;

/// What handing a part of a product to a pool thread costs, in core cycles: waking a
/// sleeping helper is 10-20 us on a VM (an interrupt to a halted vCPU). A thread's part
/// must be worth at least that much work: HANDOFF_CYCLES x 2 FMA pipes x W lanes.
pub const HANDOFF_CYCLES: usize = 30_000;

/// The shortest K slice. Every K slice loads and stores the whole MR x NR tile of C once
/// (from L3 for products past L2): 8 / KC bytes of C per multiply-add.
/// Below 256 that costs more than the L1 model's bound saves: where L1 is small for the
/// tile (32K with AVX-512's 128-byte B rows: Zen 4, KC 160 by the model) both micro-panels
/// no longer fit and the B micro-panel streams from L2, which feeds the kernel with room
/// to spare (it needs (MR + NR) 4 bytes per MR x 2 FMA instructions: 10 B/cycle on Zen 4,
/// 20 on Sapphire Rapids / Zen 5, 15 on Zen 3's AVX2 6 x 16; their L2s give 32-64).
/// Measured on Zen 4, single thread, interleaved runs: KC 160 -> 256 +2-6% at 256-2048^3.
/// The model already gives >= 256 on Zen 3 (320), Zen 5 and Sapphire Rapids (256): there
/// the floor changes nothing.
pub const KC_MIN: usize = 256;

/// `v` rounded down to a multiple of `m`, within [lo, hi] (themselves multiples of m)
fn fit(v: usize, m: usize, lo: usize, hi: usize) -> usize {
    (v / m * m).clamp(lo, hi)
}

impl Blocking {
    /// Blocking for a microkernel of `mr` rows x 2 vectors of `w` lanes on caches `c`.
    ///
    /// - KC (Low et al., "Analytical modeling is enough for high-performance BLIS"): the
    ///   A micro-panel (MR x KC, reused by every B micro-panel of the block) and the B
    ///   micro-panel streaming past it (KC x NR) share L1's ways but one (kept for C's
    ///   rows) in proportion MR : NR, so neither evicts the other: the B micro-panel gets
    ///   floor((ways - 1) NR / (MR + NR)) ways, and KC = those ways' bytes / (NR * 4);
    ///   at least KC_MIN (see there: where L1 is small for the tile, the B micro-panel
    ///   streams from L2 instead).
    /// - NCB: the packed B block (KC x NCB) takes half of this core's L2; the other half
    ///   holds the A micro-panels and C rows that stream through it.
    /// - MCA: the packed A panel (MCA x KC) takes half of L3 (without an L3, 4 x this
    ///   core's L2), at most 4096 rows. Not this core's share of L3: the panel is re-read
    ///   once per B block, NCB multiply-adds per element, which costs little even from
    ///   DRAM, while a shorter panel packs all of B once more per panel.
    /// - small: a product whose A, B and C all fit in half of L1 runs the direct loop
    ///   (packing would cost as much as the multiply).
    /// - min_part: PART_FMA_CYCLES x 2 FMA pipes x W lanes rows per part of a product cut
    ///   over threads: 128 on AVX2 (Zen 3: as before), 256 on AVX-512 (Zen 4, Zen 5,
    ///   Sapphire Rapids: Zen 5 and Sapphire Rapids multiply twice as fast per cycle as
    ///   Zen 4's 256-bit datapath, so re-packing costs them more and the longer part
    ///   holds a fortiori; their larger L2 does not enter, as the packed block is re-filled
    ///   per part whatever its size).
    pub fn derive(c: &Caches, w: usize, mr: usize) -> Blocking {
        let nr = 2 * w;
        let l1 = c.l1d;
        let way = l1.size / l1.ways.max(1);
        let free = l1.ways.max(2) - 1;
        let b_ways = (free * nr / (mr + nr)).max(1);
        // (and never more than both panels in the free ways, where B's share rounds to 0)
        let kc = (b_ways * way / (nr * 4)).min(free * way / ((mr + nr) * 4));
        let kc = fit(kc, 16, KC_MIN, 1024);
        let l2 = c.l2.size / c.l2.shared_by.max(1);
        let ncb = fit(l2 / 2 / (kc * 4), nr, 2 * nr, 4096 / nr * nr);
        let l3 = c.l3.map_or(8 * l2, |l3| l3.size);
        let mca = fit(l3 / 2 / (kc * 4), mr, 8 * mr, 4096 / mr * mr);
        let par_min_macs = HANDOFF_CYCLES * 2 * w;
        let min_part = PART_FMA_CYCLES * 2 * w;
        Blocking {
            mr,
            nr,
            kc,
            ncb,
            mca,
            small_bytes: l1.size / 2,
            par_min_macs,
            min_part,
        }
    }

    /// the blocking of ISA `S` on this machine's caches
    #[inline(always)]
    pub fn of<S: Simd>() -> Blocking {
        Blocking::derive(&crate::cpuinfo::caches(), S::W, S::MR)
    }

    /// does m x k @ k x n take the direct loop?
    #[inline(always)]
    fn is_small(&self, m: usize, n: usize, k: usize) -> bool {
        (m * k + k * n + m * n) * 4 <= self.small_bytes
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
                // SAFETY: p is the live allocation of `size` bytes just made; madvise only advises
                unsafe { madvise(p as *mut _, size, 14) };
            }
            self.ptr = p as *mut f32;
            self.layout = Some(layout);
        }
        self.ptr
    }
    fn release(&mut self) {
        if let Some(l) = self.layout.take() {
            // SAFETY: ptr was allocated with layout l by `get` and is not used after release
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
    /// the calling thread's `SharedB` of its current product
    static PACK_SHARED: RefCell<Scratch> = const { RefCell::new(Scratch { ptr: std::ptr::null_mut(), layout: None }) };
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
        } else if src.rs == 1 && rows == r {
            // panels contiguous but narrower than a vector multiple (AVX-512's MR 8 of 16
            // lanes, AVX2's 6 of 8): a transposed A, every Linear's weight gradient
            // dY^T @ X. r floats a k, one fixed-size copy (was element by element:
            // (1024, 2048)^T @ (2048, 256) at 88 GFLOPS, the row-major A's at 98)
            for k in 0..kc {
                std::ptr::copy_nonoverlapping(src.at(ir, k), d.add(k * r), r);
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
#[allow(clippy::too_many_arguments)] // the microkernel's operands, passed in registers
#[allow(clippy::needless_range_loop)] // i indexes acc and computes the row address in step
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
    // C's tile is loaded (accumulate) or written only after the kc loop: ask for its
    // lines now, so the loads and stores find them in L1 (its rows lie ldc apart, where
    // the hardware prefetcher does not look). Zen 5, 2048^3 on 2 threads: +3%.
    for i in 0..MR {
        S::prefetch(c.add(i * ldc));
        S::prefetch(c.add(i * ldc + 2 * w - 1));
    }
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

/// B packed whole, once, for all the row parts of one product cut over threads (`matmul`),
/// where each part would otherwise pack all of B again for its rows (a part of 256 rows
/// re-packs every float of B for 256 multiply-adds with it). K slice `pc` (KC rows, the
/// last one shorter) holds the micro-panels of every column, laid out as gemm_blocked
/// packs a block, so a part reads block (pc, jc) in place (`panel`). The packing itself
/// is cut over the threads by columns (`PackB`). Zen 3 (AVX2), 2 threads, 8 row parts:
/// 1024^3 and 2048^3 +8-10% (docs/perf/simd_matmul.md, "One packed B for all row parts").
#[derive(Clone, Copy)]
struct SharedB {
    p: *const f32,
    /// B's columns rounded up to whole micro-panels (NR)
    npad: usize,
}
// SAFETY: the packed buffer is written before any part reads it (two pool runs) and only read after
unsafe impl Send for SharedB {}
// SAFETY: as for Send
unsafe impl Sync for SharedB {}

impl SharedB {
    /// the micro-panel of columns j.. (a multiple of NR) in the K slice that starts at row
    /// pc and is kc deep
    #[inline(always)]
    unsafe fn panel(&self, pc: usize, j: usize, kc: usize) -> *const f32 {
        self.p.add(pc * self.npad + j * kc)
    }
}

/// the largest B packed whole for row parts (4096^2 floats); past it each part packs its own blocks
const SHARED_B_MAX_BYTES: usize = 64 << 20;
/// a shared packing buffer past this size is freed after its product
const SHARED_B_KEEP_BYTES: usize = 16 << 20;

/// Do the row parts of `s` (a cut of `nb` products m x k @ k x n, not the dot path) share
/// one packed B (`SharedB`)? Where each part would pack all of B (B's rows, `b_rows` unit
/// stride, are read in place only under `b_in_place`) and B packed fits SHARED_B_MAX_BYTES.
fn shares_b(
    s: &Split,
    nb: usize,
    m: usize,
    n: usize,
    k: usize,
    blk: &Blocking,
    b_rows: bool,
) -> bool {
    let part_rows = m.div_ceil(s.parts.max(1)).next_multiple_of(blk.mr);
    nb == 1
        && !s.by_batch
        && !s.split_n
        && s.parts > 1
        && !(b_rows && b_in_place(part_rows, k, blk.kc))
        && k * n.next_multiple_of(blk.nr) * 4 <= SHARED_B_MAX_BYTES
}

/// Pack columns lo..hi (lo a multiple of NR) of B (k x n) for every K slice of `kc` rows
/// into `dst`, in SharedB's layout (rows of npad floats per K row).
struct PackB {
    b: Mat,
    k: usize,
    kc: usize,
    npad: usize,
    lo: usize,
    hi: usize,
    dst: *mut f32,
}

impl Kernel for PackB {
    type Out = ();
    fn run<S: Simd>(self) {
        let PackB {
            b,
            k,
            kc,
            npad,
            lo,
            hi,
            dst,
        } = self;
        let mut pc = 0;
        while pc < k {
            let kcs = kc.min(k - pc);
            // SAFETY: b holds k x n floats at its strides, hi <= n; dst holds k x npad floats
            // and slice pc's columns lo..hi (padded to whole panels) end within its npad
            unsafe {
                let src = Mat::new(b.at(pc, lo), b.cs, b.rs); // B's columns: rows of B^T
                pack::<S>(2 * S::W, hi - lo, kcs, src, dst.add(pc * npad + lo * kcs));
            }
            pc += kc;
        }
    }
}

/// widest product whose A is read in place rather than packed (see gemm_blocked)
const DIRECT_A_MAX_N: usize = 256;
/// tallest product whose B is read in place too (see gemm_blocked): up to here
/// few A panels would reuse a packed B block (measured: docs/perf/simd_matmul.md)
const DIRECT_B_MAX_M: usize = 256;

/// Does gemm_blocked read B's (row-major) rows in place for a product of `m` rows and
/// depth `k` (K slices of `kc`)? Where few A panels would reuse a packed B block. (The
/// one rule: `Split::plan` asks it of a part too.)
#[inline(always)]
fn b_in_place(m: usize, k: usize, kc: usize) -> bool {
    m <= DIRECT_B_MAX_M / 2 || (m <= DIRECT_B_MAX_M && k <= kc)
}

/// one product, one thread, blocked: C[m x n] (ldc) = A[m x k] @ B[k x n]
///
/// Loop order (BLIS, transposed to row-major C): the A micro-panel is the
/// broadcast side and stays in L1 across the innermost loop, which streams
/// B micro-panels out of the packed KC x NCB block of B held in L2; the packed
/// MCA x KC panel of A sits in L3.
#[inline(always)]
unsafe fn gemm_blocked<S: Simd, const MR: usize>(g: GemmK, blk: Blocking) {
    let GemmK {
        m,
        n,
        k,
        a,
        b,
        c,
        ldc,
        packed_b,
        ..
    } = g;
    let nr = 2 * S::W;
    let Blocking {
        kc: kcb, ncb, mca, ..
    } = blk;
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
            // A row-major A is read in place when n is small: packing A costs O(m k)
            // against O(m n k) of work; for wide products the MR rows read in place
            // (often 4 KiB apart: one L1 set) lose to the packed panel
            // (docs/perf/simd_matmul.md). Its whole MR-row panels, that is: a last
            // partial panel is packed (zero-padded) alone, so 128 rows are 21 panels in
            // place and one packed, not 22 packed (Zen 3, 1 thread: 128^3 83 -> 88 GFLOPS,
            // 64^3 70 -> 90)
            let direct = a.cs == 1 && a.rs > 0 && n <= DIRECT_A_MAX_N;
            let in_place_rows = if direct { mc / MR * MR } else { 0 };
            if in_place_rows < mc {
                let rest = Mat::new(a.at(ic + in_place_rows, pc), a.rs, a.cs);
                pack::<S>(MR, mc - in_place_rows, kc, rest, pa);
            }
            let mut jc = 0;
            while jc < n {
                let nc = ncb.min(n - jc);
                // B's rows are read in place too when few A panels would reuse the packed
                // block (m small): packing B costs O(k n) against O(m n k) of work. Also
                // under a packed A (M not in whole micro-panels, or a wide product) when
                // the block has at most 4 A panels, each packed B panel used up to 4
                // times: LeNet conv1's (6, 25) @ (25, 43008) 330 -> 190 us, conv2's
                // (16, 150) @ (150, 6144) 400-530 -> 300 us (2 panels); the LSTM's per-step
                // (32, 256) @ (256, 1024) 217 -> 175 us (4 panels; m 17-32 at n 512-4096,
                // k 64-2048: +10-25%, docs/perf/simd_matmul.md "Four A panels"); with
                // every A panel of a (100, 512) @ (512, 2048) it lost 1.5x (docs/perf/conv.md,
                // "Two threads")
                let direct_b = packed_b.is_none()
                    && (direct || mc <= 4 * S::MR)
                    && b.cs == 1
                    && b.rs > 0
                    && nc % nr == 0
                    && b_in_place(m, k, kcb);
                if !direct_b && packed_b.is_none() {
                    // B's columns are the rows of its transpose
                    pack::<S>(nr, nc, kc, Mat::new(b.at(pc, jc), b.cs, b.rs), pb);
                }
                let mut ir = 0;
                while ir < mc {
                    let mm = MR.min(mc - ir);
                    let in_place = ir < in_place_rows;
                    let ap = if in_place {
                        a.at(ic + ir, pc)
                    } else {
                        pa.add((ir - in_place_rows) * kc) as *const f32
                    };
                    let lda = a.rs as usize;
                    let mut jr = 0;
                    while jr < nc {
                        let nn = nr.min(nc - jr);
                        let (bp, ldb) = if direct_b {
                            (b.at(pc, jc + jr), b.rs as usize)
                        } else if let Some(sb) = packed_b {
                            (sb.panel(pc, jc + jr, kc), nr)
                        } else {
                            (pb.add(jr * kc) as *const f32, nr)
                        };
                        let cp = c.add((ic + ir) * ldc + jc + jr);
                        let (c_to, ldc_to, acc_to) = if mm == MR && nn == nr {
                            (cp, ldc, pc > 0)
                        } else {
                            (tile.as_mut_ptr(), nr, false) // an edge tile: via scratch
                        };
                        if in_place {
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

/// direct loop for tiny products: C row i = sum_k A[i,k] * B row k, 4 rows at a time
/// (4 independent FMA chains per vector of C: one chain alone waits on the FMA latency).
/// B is read in place when its rows are contiguous and whole vectors; otherwise (a
/// transposed B: attention's q @ k^T, whose k rows are B's columns; or N not a multiple
/// of the lanes) it is first copied into rows padded to whole vectors (k x n floats
/// against m x n x k multiply-adds), so every column takes the vector loop: the scalar
/// loop it replaces ran a dependent chain of k multiply-adds per element (makemore's
/// (32, 4) batches of 16 x 16 x 16 q @ k^T: 180 -> ~21 us a record).
#[inline(always)]
unsafe fn gemm_small<S: Simd>(g: GemmK) {
    let w = S::W;
    let mut g = g;
    let ldb = g.n.next_multiple_of(w);
    if g.b.cs != 1 || !g.n.is_multiple_of(w) {
        let (n, k, b) = (g.n, g.k, g.b);
        let buf = PACK_B.with(|s| s.borrow_mut().get(k * ldb));
        for kk in 0..k {
            let row = buf.add(kk * ldb);
            for j in n..ldb {
                *row.add(j) = 0.0;
            }
        }
        // rows of the copy in the outer loop: each written contiguously (a vector at a
        // time where the compiler gathers B's strided row)
        for kk in 0..k {
            let (src, row) = (b.at(kk, 0), buf.add(kk * ldb));
            for j in 0..n {
                *row.add(j) = *src.offset(j as isize * b.cs);
            }
        }
        g.b = Mat::new(buf, ldb as isize, 1);
    }
    let mut i = 0;
    while i + 4 <= g.m {
        small_rows::<S, 4>(g, i);
        i += 4;
    }
    while i < g.m {
        small_rows::<S, 1>(g, i);
        i += 1;
    }
}

/// rows i..i+R of C in the direct loop (B's rows contiguous, readable in whole vectors
/// up to n rounded up to the lanes: gemm_small), two vectors of columns at a time where
/// they fit: R x 2 independent FMA chains, where R alone (4) left the two FMA pipes waiting
/// on the FMA latency (AVX2's 16-wide attention tiles: one vector a row was half the rate)
#[inline(always)]
unsafe fn small_rows<S: Simd, const R: usize>(g: GemmK, i: usize) {
    let (n, w) = (g.n, S::W);
    let padded = n.next_multiple_of(w);
    let mut j = 0;
    while j + 2 * w <= padded {
        small_tile::<S, R, 2>(g, i, j);
        j += 2 * w;
    }
    if j < n {
        small_tile::<S, R, 1>(g, i, j);
    }
}

/// C[i..i+R, j..j+V*W] (clipped at n) of the direct loop: one accumulator per row and
/// vector, summed over k in order (the bits do not depend on V)
#[inline(always)]
#[allow(clippy::needless_range_loop)] // r and v index acc and compute addresses in step
unsafe fn small_tile<S: Simd, const R: usize, const V: usize>(g: GemmK, i: usize, j: usize) {
    let GemmK {
        n, k, a, b, c, ldc, ..
    } = g;
    let w = S::W;
    let mut acc = [[S::zero(); V]; R];
    for kk in 0..k {
        let mut bv = [S::zero(); V];
        for v in 0..V {
            bv[v] = S::load(b.at(kk, j + v * w));
        }
        for r in 0..R {
            let av = S::splat(*a.at(i + r, kk));
            for v in 0..V {
                acc[r][v] = S::fma(av, bv[v], acc[r][v]);
            }
        }
    }
    for r in 0..R {
        for v in 0..V {
            let jj = j + v * w;
            if jj >= n {
                break;
            }
            let cp = c.add((i + r) * ldc + jj);
            if jj + w <= n {
                S::store(cp, acc[r][v]);
            } else {
                S::store_part(cp, acc[r][v], n - jj);
            }
        }
    }
}

/// K slice of the dot path (2 KiB a row): the thin side's rows (<= 16: is_dot) stay in L1
/// while the other side's stream by, each loaded once per slice
const DOT_KC: usize = 512;

/// Does m x k @ k x n take the dot path? A long, thin product whose A rows and B columns
/// are contiguous (a weight's gradient: (Co, N*L) @ (N*L, K) with B the columns' transpose):
/// each C element one dot product of two contiguous runs. The blocked path packs B's
/// transpose element by element and loads and stores C once per KC slice for an M below
/// one micro-tile. LeNet conv1's (6, 43008) @ (43008, 25), 1 thread, loaded machine: 3.9 ->
/// 0.25 ms (PyTorch 0.48); conv2's (16, 6144) @ (6144, 150) 0.8-1.2 -> 0.4 ms (PyTorch 0.5).
#[inline(always)]
fn is_dot(m: usize, n: usize, k: usize, a: &Mat, b: &Mat) -> bool {
    a.cs == 1 && b.rs == 1 && k >= 2048 && m * n <= 4096 && (m <= 16 || n <= 16)
}

/// C = A @ B as dot products of A's rows and B's columns (both contiguous: is_dot), tiles
/// of 4 rows x 2 columns of C (8 accumulators, 6 loads per 8 FMAs), K in DOT_KC slices; the
/// thin side's loop inside, so that its rows are read from L1.
#[inline(always)]
unsafe fn gemm_dot<S: Simd>(g: GemmK) {
    let GemmK {
        m, n, k, c, ldc, ..
    } = g;
    for i in 0..m {
        std::slice::from_raw_parts_mut(c.add(i * ldc), n).fill(0.0);
    }
    let mut k0 = 0;
    while k0 < k {
        let kc = DOT_KC.min(k - k0);
        if m <= n {
            // A's m rows in L1; each pair of B's columns read once
            let mut j = 0;
            while j < n {
                let q = if j + 2 <= n { 2 } else { 1 };
                // (no closure here: it would be compiled without the ISA's features)
                let mut i = 0;
                while i + 4 <= m {
                    dot_tile::<S, 4>(g, i, j, q, k0, kc);
                    i += 4;
                }
                while i < m {
                    dot_tile::<S, 1>(g, i, j, q, k0, kc);
                    i += 1;
                }
                j += q;
            }
        } else {
            // B's n columns in L1; each 4 rows of A read once
            let mut i = 0;
            while i < m {
                let r = if i + 4 <= m { 4 } else { 1 };
                let mut j = 0;
                while j < n {
                    let q = if j + 2 <= n { 2 } else { 1 };
                    if r == 4 {
                        dot_tile::<S, 4>(g, i, j, q, k0, kc);
                    } else {
                        dot_tile::<S, 1>(g, i, j, q, k0, kc);
                    }
                    j += q;
                }
                i += r;
            }
        }
        k0 += kc;
    }
}

/// C[i..i+R, j..j+q] (q = 1 or 2) += the K slice k0..k0+kc of their dots
#[inline(always)]
#[allow(clippy::needless_range_loop)] // r indexes acc and computes the row address in step
unsafe fn dot_tile<S: Simd, const R: usize>(
    g: GemmK,
    i: usize,
    j: usize,
    q: usize,
    k0: usize,
    kc: usize,
) {
    let GemmK { a, b, c, ldc, .. } = g;
    let w = S::W;
    let rows: [*const f32; R] = std::array::from_fn(|r| a.at(i + r, k0));
    let b0 = b.at(k0, j);
    let b1 = b.at(k0, j + q - 1);
    let mut acc0 = [S::zero(); R];
    let mut acc1 = [S::zero(); R];
    let mut kk = 0;
    while kk + w <= kc {
        let v0 = S::load(b0.add(kk));
        let v1 = S::load(b1.add(kk));
        for r in 0..R {
            let av = S::load(rows[r].add(kk));
            acc0[r] = S::fma(av, v0, acc0[r]);
            acc1[r] = S::fma(av, v1, acc1[r]);
        }
        kk += w;
    }
    if kk < kc {
        let left = kc - kk;
        let v0 = S::load_part(b0.add(kk), left, 0.0);
        let v1 = S::load_part(b1.add(kk), left, 0.0);
        for r in 0..R {
            let av = S::load_part(rows[r].add(kk), left, 0.0);
            acc0[r] = S::fma(av, v0, acc0[r]);
            acc1[r] = S::fma(av, v1, acc1[r]);
        }
    }
    for r in 0..R {
        let row = c.add((i + r) * ldc + j);
        *row += S::hsum(acc0[r]);
        if q == 2 {
            *row.add(1) += S::hsum(acc1[r]);
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
    /// None: the ISA's derived blocking (`Blocking::of`); Some: an explicit one (tests,
    /// mmbench sweeps; its mr / nr must be the ISA's)
    blk: Option<Blocking>,
    /// B already packed whole for this blocking (`SharedB`), or None: packed here
    packed_b: Option<SharedB>,
}
// SAFETY: pointers into validated views; tasks write disjoint tiles of c
unsafe impl Send for GemmK {}
// SAFETY: as for Send: tasks write disjoint tiles of c
unsafe impl Sync for GemmK {}

impl Kernel for GemmK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let GemmK {
            m, n, k, c, ldc, ..
        } = self;
        let blk = self.blk.unwrap_or_else(Blocking::of::<S>);
        debug_assert!(blk.mr == S::MR && blk.nr == 2 * S::W);
        // SAFETY: a, b, c hold the m x k, k x n, m x n matrices at their leading dimensions
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
            if blk.is_small(m, n, k) {
                gemm_small::<S>(self);
                return;
            }
            if is_dot(m, n, k, &self.a, &self.b) {
                gemm_dot::<S>(self);
                return;
            }
            match S::MR {
                12 => gemm_blocked::<S, 12>(self, blk),
                8 => gemm_blocked::<S, 8>(self, blk),
                6 => gemm_blocked::<S, 6>(self, blk),
                _ => gemm_blocked::<S, 4>(self, blk),
            }
        }
    }
}

/// How `matmul` cuts a batch of `nb` products (m x k) @ (k x n) into pool tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// pool tasks
    pub tasks: usize,
    /// each task a range of the batch (else a part of one product)
    pub by_batch: bool,
    /// parts of one product: column ranges of C (split_n) or row ranges
    pub split_n: bool,
    pub parts: usize,
}

impl Split {
    /// Use only as many threads as have `par_min_macs` of work each. Many products:
    /// one task per thread, each a range of the batch; few: cut the larger of M and N of
    /// each product into whole micro-tiles, M when square (the threads then pack disjoint
    /// A panels; measured: docs/perf/simd_matmul.md), into up to TASKS_PER_THREAD parts
    /// per thread of at least `min_part` rows (columns). The pool's threads claim parts as
    /// they come free, so a helper that wakes late (10-100 us on a VM) or shares its
    /// core with another process's spinning thread takes fewer parts instead of the
    /// whole product waiting for its half.
    ///
    /// Except where A's rows can be read in place (`a_rows`: unit column stride; M in
    /// whole micro-panels) and N can be cut into at most TASKS_PER_THREAD parts per
    /// thread no wider than DIRECT_A_MAX_N: then N is cut, into such parts. No part packs A (gemm_blocked
    /// reads it in place for narrow products) and B is packed once in all, where row
    /// parts each pack the whole of B. Zen 5, 2 threads, interleaved (mmsplit): 1024^3
    /// 324 -> 356 GFLOPS, 512^3 348 -> 388; 2048^3 (8 parts either way) the same.
    ///
    /// `min_part` bounds a part that packs (it re-packs the other operand); a row part
    /// that packs nothing (A's and B's rows read in place: narrow, short products such as
    /// 128^3 or 256^3, `b_rows` = B's rows unit-stride) costs only its claim, so such
    /// products get TASKS_PER_THREAD parts per thread of whole micro-panels: a helper
    /// that wakes late, or shares its core, then takes fewer of them instead of the
    /// caller waiting for its half (docs/perf/simd_kernel_rows.md).
    #[allow(clippy::too_many_arguments)]
    pub fn plan(
        nb: usize,
        m: usize,
        n: usize,
        k: usize,
        threads: usize,
        blk: &Blocking,
        a_rows: bool,
        b_rows: bool,
    ) -> Split {
        let useful = Split::useful(nb, m, n, k, threads, blk);
        let narrow_parts = n.div_ceil(DIRECT_A_MAX_N).max(useful);
        // (M in whole MR-row panels, as measured on Zen 5: with a partial last panel, which
        // gemm_blocked packs, 2048^3 on Zen 3 ran 5-10% slower cut so than in row parts
        // sharing one packed B)
        let narrow = a_rows
            && m.is_multiple_of(blk.mr)
            && n > DIRECT_A_MAX_N
            && narrow_parts <= useful * TASKS_PER_THREAD;
        let split_n = n > m || narrow;
        if useful == 1 || nb >= useful {
            return Split {
                tasks: useful.min(nb.max(1)),
                by_batch: true,
                split_n,
                parts: 1,
            };
        }
        let (len, align) = if split_n { (n, blk.nr) } else { (m, blk.mr) };
        let parts = if narrow {
            narrow_parts
        } else {
            let tasks = (useful * TASKS_PER_THREAD).min(len.div_ceil(align)).max(1);
            // (the rows of one of `tasks` parts, as `chunk` cuts them)
            let rows = len.div_ceil(tasks).next_multiple_of(align);
            let packs_nothing = !split_n
                && a_rows
                && b_rows
                && n <= DIRECT_A_MAX_N
                && n.is_multiple_of(blk.nr)
                && b_in_place(rows, k, blk.kc);
            let min_part = if packs_nothing { align } else { blk.min_part };
            tasks.min((len / min_part).max(useful))
        };
        Split {
            tasks: nb * parts,
            by_batch: false,
            split_n,
            parts,
        }
    }

    /// The threads worth using on a product: each gets `par_min_macs` at least.
    fn useful(nb: usize, m: usize, n: usize, k: usize, threads: usize, blk: &Blocking) -> usize {
        threads.min(nb * m * n * k / blk.par_min_macs.max(1)).max(1)
    }

    /// The cut of a product that takes the dot path (`is_dot`), and its alignment: as many
    /// threads as `plan` gives it, but one product is cut along its wide side into one
    /// part per such thread, in whole dot tiles (4 rows or 2 columns). The thin side stays
    /// whole in every part, so each part is a dot product too, and each re-reads it (one
    /// part per thread keeps that to one read per thread). `plan` cuts in the blocked
    /// path's micro-tiles (32 columns on AVX-512): LeNet conv1's weight gradient,
    /// (6, 43008) @ (43008, 25), ran on one thread whatever the pool held.
    pub fn plan_dot(
        nb: usize,
        m: usize,
        n: usize,
        k: usize,
        threads: usize,
        blk: &Blocking,
    ) -> (Split, usize) {
        let split_n = n >= m;
        let align = if split_n { 2 } else { 4 };
        let s = Split::plan(nb, m, n, k, threads, blk, false, false);
        if s.by_batch {
            return (Split { split_n, ..s }, align);
        }
        let useful = Split::useful(nb, m, n, k, threads, blk);
        let len = if split_n { n } else { m };
        let parts = useful.min(len.div_ceil(align)).max(1);
        let split = Split {
            tasks: nb * parts,
            by_batch: false,
            split_n,
            parts,
        };
        (split, align)
    }
}

/// The batch geometry of a product a (B, M, K) @ b (B, K, N), or with two batch dims
/// (B1, B2, ...): batch item bi lies at (bi / B2) * stride0 + (bi % B2) * stride1 of each
/// operand (B2 = 1, stride1 = 0 in 3-d). Shared by every element type's GEMM.
pub struct Batches {
    pub nb: usize, // B (B1 * B2)
    nb2: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub d: usize, // 0, or 1 with a second batch dim: the row / column dims are d + 1, d + 2
    ab: (isize, isize),
    bb: (isize, isize),
}

impl Batches {
    pub fn of(a: &Arr, b: &Arr) -> Self {
        let d = a.nd - 3;
        let nb2 = if d == 1 { a.shape[1] } else { 1 };
        let second = |x: &Arr| if d == 1 { x.st[1] } else { 0 };
        Batches {
            nb: a.shape[0] * nb2,
            nb2,
            m: a.shape[d + 1],
            k: a.shape[d + 2],
            n: b.shape[d + 2],
            d,
            ab: (a.st[0], second(a)),
            bb: (b.st[0], second(b)),
        }
    }

    fn offset(&self, bi: usize, (s0, s1): (isize, isize)) -> isize {
        (bi / self.nb2) as isize * s0 + (bi % self.nb2) as isize * s1
    }

    /// Element offset of batch item bi in a / in b.
    pub fn a_offset(&self, bi: usize) -> isize {
        self.offset(bi, self.ab)
    }

    pub fn b_offset(&self, bi: usize) -> isize {
        self.offset(bi, self.bb)
    }
}

/// A batch of products against one matrix (b's batch stride 0: a Linear's weight against
/// (B, T, K) inputs) whose a rows lie as one run of rows (a's batch stride M row strides):
/// the same dot products as one (B*M, K) @ (K, N) product, which the blocked loops run at
/// full tiles and the pool cuts freely, instead of B products of M rows each. None when
/// the batch does not fold so.
fn one_batch(out: &Arr, a: &Arr, b: &Arr) -> Option<(Arr, Arr, Arr)> {
    if a.nd != 3
        || a.shape[0] < 2
        || a.shape[1] == 0
        || b.st[0] != 0
        || a.st[0] != a.shape[1] as isize * a.st[1]
    {
        return None;
    }
    let (rows, k, n) = (a.shape[0] * a.shape[1], a.shape[2], b.shape[2]);
    Some((
        Arr::new(out.ptr, out.dtype, &[1, rows, n], &[0, n as isize, 1]),
        Arr::new(a.ptr, a.dtype, &[1, rows, k], &[0, a.st[1], a.st[2]]),
        Arr::new(b.ptr, b.dtype, &[1, k, n], &[0, b.st[1], b.st[2]]),
    ))
}

/// out (B, M, N) = a (B, M, K) @ b (B, K, N), or with two batch dims (B1, B2, ...) (Batches).
pub fn matmul(pool: &Pool, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    if let Some((out, a, b)) = one_batch(out, a, b) {
        return matmul(pool, &out, &a, &b);
    }
    let bt = Batches::of(a, b);
    let Batches { nb, m, k, n, d, .. } = bt;
    if nb == 0 {
        return Ok(());
    }
    // per operand: the row / column strides
    let asd = [0, a.st[d + 1], a.st[d + 2]];
    let bsd = [0, b.st[d + 1], b.st[d + 2]];
    let blk = dispatch(Derived);
    let threads = pool.threads();
    let dot = is_dot(
        m,
        n,
        k,
        &Mat::new(std::ptr::null(), asd[1], asd[2]),
        &Mat::new(std::ptr::null(), bsd[1], bsd[2]),
    );
    // A's / B's rows unit-stride (read in place where the blocked loops allow)
    let (a_rows, b_rows) = (asd[2] == 1 && asd[1] > 0, bsd[2] == 1 && bsd[1] > 0);
    let (split, align) = if dot {
        Split::plan_dot(nb, m, n, k, threads, &blk)
    } else {
        let s = Split::plan(nb, m, n, k, threads, &blk, a_rows, b_rows);
        (s, if s.split_n { blk.nr } else { blk.mr })
    };
    let Split {
        tasks: ntasks,
        by_batch,
        split_n,
        parts,
    } = split;
    let len = if split_n { n } else { m };
    let (ap, bp, cp) = (a.f() as usize, b.f() as usize, out.f() as usize);
    // one packed B for every row part of a product whose parts would each pack all of it
    let npad = n.next_multiple_of(blk.nr);
    let share = !dot && shares_b(&split, nb, m, n, k, &blk, b_rows);
    let shared_b = if share {
        let dst = PACK_SHARED.with(|s| s.borrow_mut().get(k * npad)) as usize;
        let tasks = threads.min(npad / blk.nr);
        pool.run(tasks, &|t| {
            let (lo, hi) = crate::view::chunk(n, tasks, t, blk.nr);
            if lo < hi {
                dispatch(PackB {
                    b: Mat::new(bp as *const f32, bsd[1], bsd[2]),
                    k,
                    kc: blk.kc,
                    npad,
                    lo,
                    hi,
                    dst: dst as *mut f32,
                });
            }
        });
        Some(SharedB {
            p: dst as *const f32,
            npad,
        })
    } else {
        None
    };
    let one = |bi: usize, part: usize| {
        let (lo, hi) = if parts == 1 {
            (0, len)
        } else {
            crate::view::chunk(len, parts, part, align)
        };
        if lo >= hi && len > 0 {
            return;
        }
        let a0 = (ap as *const f32).wrapping_offset(bt.a_offset(bi));
        let b0 = (bp as *const f32).wrapping_offset(bt.b_offset(bi));
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
            blk: Some(blk),
            packed_b: shared_b,
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
    if share && k * npad * 4 > SHARED_B_KEEP_BYTES {
        PACK_SHARED.with(|s| s.borrow_mut().release());
    }
    Ok(())
}

/// out (contiguous, rows of N) += bias (N,) on every row: matmul_bias's second pass. A
/// float32 add of the stored product, so the bits are those of matmul then add; rows are
/// cut over the pool's threads only when there are many (it is one read and write of out).
pub fn add_bias(pool: &Pool, out: &Arr, bias: &Arr) -> KResult {
    let n = bias.shape[0];
    let rows = out.numel().checked_div(n).unwrap_or(0);
    if rows == 0 {
        return Ok(());
    }
    let (op, bp, bs) = (out.f() as usize, bias.f() as usize, bias.st[0]);
    let ntasks = if rows * n >= 1 << 18 {
        pool.threads().min(rows)
    } else {
        1
    };
    pool.run(ntasks, &|t| {
        let (lo, hi) = crate::view::chunk(rows, ntasks, t, 1);
        // SAFETY: the record's views were checked: out holds rows * n contiguous floats,
        // bias n floats bias.st[0] apart; tasks write disjoint rows
        let b: Vec<f32> = (0..n)
            .map(|j| unsafe { *(bp as *const f32).offset(j as isize * bs) })
            .collect();
        for r in lo..hi {
            // SAFETY: rows lo..hi of the contiguous rows x n out view; tasks take disjoint rows
            let row = unsafe { std::slice::from_raw_parts_mut((op as *mut f32).add(r * n), n) };
            for (x, y) in row.iter_mut().zip(&b) {
                *x += *y;
            }
        }
    });
    Ok(())
}

/// single-threaded product of contiguous matrices (benchmarks, tests)
pub fn sgemm_st(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    sgemm_st_with(None, m, n, k, a, b, c)
}

/// `sgemm_st` with an explicit blocking (None: the derived one), for sweeps (mmbench)
pub fn sgemm_st_with(
    blk: Option<Blocking>,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    if let Some(b) = blk {
        assert_eq!(
            (b.mr, b.nr),
            (blocking().mr, blocking().nr),
            "mr / nr are the ISA's"
        );
    }
    // SAFETY: the asserts above: the slices hold the m x k, k x n and m x n matrices
    unsafe {
        sgemm_st_rows(
            blk,
            m,
            n,
            k,
            a.as_ptr(),
            k,
            b.as_ptr(),
            n,
            c.as_mut_ptr(),
            n,
        )
    }
}

/// `sgemm_st_with` on row-major operands with row strides lda, ldb, ldc (benchmarks:
/// mmsplit cuts a product into column parts with it)
///
/// # Safety
/// a, b and c must hold m x k, k x n and m x n matrices with those row strides.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_st_rows(
    blk: Option<Blocking>,
    m: usize,
    n: usize,
    k: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
) {
    dispatch(GemmK {
        m,
        n,
        k,
        a: Mat::new(a, lda as isize, 1),
        b: Mat::new(b, ldb as isize, 1),
        c,
        ldc,
        blk,
        packed_b: None,
    });
}

/// the active ISA's derived blocking
struct Derived;
impl Kernel for Derived {
    type Out = Blocking;
    fn run<S: Simd>(self) -> Blocking {
        Blocking::of::<S>()
    }
}

/// the active ISA's blocking on this machine (what `tk_describe` reports)
pub fn blocking() -> Blocking {
    dispatch(Derived)
}

/// The active ISA's blocking and the caches it was derived from, as one JSON object
/// (Python's `describe_platform` shows it; `python -m torchic bench matmul` prints it).
pub fn describe_json() -> String {
    let c = crate::cpuinfo::caches();
    let b = blocking();
    let cache = |c: &crate::cpuinfo::Cache| {
        format!(
            "{{\"size\": {}, \"ways\": {}, \"line\": {}, \"shared_by\": {}}}",
            c.size, c.ways, c.line, c.shared_by
        )
    };
    format!(
        "{{\"isa\": \"{}\", \"cache_source\": \"{}\", \"l1d\": {}, \"l2\": {}, \"l3\": {}, \
         \"mr\": {}, \"nr\": {}, \"kc\": {}, \"ncb\": {}, \"mca\": {}, \
         \"small_bytes\": {}, \"par_min_macs\": {}, \"handoff_cycles\": {}, \
         \"min_part\": {}, \"part_fma_cycles\": {}, \"kc_min\": {}}}",
        crate::arch::active().name(),
        c.source,
        cache(&c.l1d),
        cache(&c.l2),
        c.l3.as_ref().map_or("null".to_string(), cache),
        b.mr,
        b.nr,
        b.kc,
        b.ncb,
        b.mca,
        b.small_bytes,
        b.par_min_macs,
        HANDOFF_CYCLES,
        b.min_part,
        PART_FMA_CYCLES,
        KC_MIN
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa};

    #[allow(clippy::too_many_arguments)] // a plain triple loop over every operand's layout
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

    use crate::cpuinfo::Cache;

    fn caches(l1: (usize, usize), l2: (usize, usize, usize), l3: Option<(usize, usize)>) -> Caches {
        let c = |size, ways, shared_by| Cache {
            size,
            ways,
            line: 64,
            shared_by,
        };
        Caches {
            l1d: c(l1.0, l1.1, 1),
            l2: c(l2.0, l2.1, l2.2),
            l3: l3.map(|(size, shared_by)| c(size, 16, shared_by)),
            source: "test",
        }
    }

    #[test]
    fn blocking_follows_the_caches() {
        const K: usize = 1 << 10;
        const M: usize = 1 << 20;
        // Zen 3 (this CI VM's EPYC), AVX2 6 x 16: 5 of L1's 7 free ways for the B
        // micro-panel -> KC 320; half of L2 -> NCB 192; half of L3 (32 MiB) -> MCA at its cap
        let zen3 = caches((32 * K, 8), (512 * K, 8, 1), Some((32 * M, 16)));
        let b = Blocking::derive(&zen3, 8, 6);
        assert_eq!((b.mr, b.nr, b.kc, b.ncb, b.mca), (6, 16, 320, 192, 4092));
        assert_eq!(
            (b.small_bytes, b.par_min_macs, b.min_part),
            (16 * K, HANDOFF_CYCLES * 16, 128)
        );
        // Sapphire Rapids / Zen 5, AVX-512 8 x 32: 8 of 11 ways -> KC 256; NCB 1024 in a
        // 2 MiB L2; a 105 MiB L3 -> MCA at its cap
        let spr = caches((48 * K, 12), (2 * M, 16, 1), Some((105 * M, 112)));
        let b = Blocking::derive(&spr, 16, 8);
        assert_eq!((b.kc, b.ncb, b.mca, b.min_part), (256, 1024, 4096, 256));
        // Zen 4 (an EPYC VM), AVX-512 8 x 32 on 32K 8-way, 1M 8-way: the model's KC 160
        // raised to KC_MIN, NCB 512 (half of L2), parts of 256 rows
        let zen4 = caches((32 * K, 8), (M, 8, 1), Some((32 * M, 2)));
        let b = Blocking::derive(&zen4, 16, 8);
        assert_eq!((b.kc, b.ncb, b.mca, b.min_part), (256, 512, 4096, 256));
        // an Arm core with no L3 and an L2 shared by 4, NEON 8 x 8
        let arm = caches((64 * K, 4), (M, 16, 4), None);
        let b = Blocking::derive(&arm, 4, 8);
        assert_eq!((b.kc, b.ncb, b.mca), (512, 64, 512));
        // an Alder Lake P-core (48K 12-way, 1.25M 10-way, 12M L3), AVX2: KC 512, NCB
        // 320, half of L3 -> MCA 3072
        let adl = caches((48 * K, 12), (1280 * K, 10, 1), Some((12 * M, 16)));
        let b = Blocking::derive(&adl, 8, 6);
        assert_eq!((b.kc, b.ncb, b.mca), (512, 320, 3072));
    }

    #[test]
    fn blocking_fits_its_caches_for_any_sizes() {
        for (w, mr) in [(16, 8), (8, 6), (4, 8), (1, 4)] {
            for l1 in [16 << 10, 32 << 10, 48 << 10, 64 << 10, 128 << 10] {
                for ways in [2, 4, 8, 12, 16] {
                    for l2 in [256 << 10, 512 << 10, 1 << 20, 2 << 20, 16 << 20] {
                        for l3 in [
                            None,
                            Some((8 << 20, 8)),
                            Some((32 << 20, 2)),
                            Some((256 << 20, 128)),
                        ] {
                            let c = caches((l1, ways), (l2, 16, 1), l3);
                            let b = Blocking::derive(&c, w, mr);
                            let ctx = format!("{c:?} {b:?}");
                            assert_eq!(b.nr, 2 * w, "{ctx}");
                            assert!(
                                b.kc.is_multiple_of(16) && (KC_MIN..=1024).contains(&b.kc),
                                "{ctx}"
                            );
                            assert!(
                                b.ncb.is_multiple_of(b.nr) && b.ncb >= 2 * b.nr && b.ncb <= 4096,
                                "{ctx}"
                            );
                            assert!(
                                b.mca.is_multiple_of(mr) && b.mca >= 8 * mr && b.mca <= 4096,
                                "{ctx}"
                            );
                            // both micro-panels fit in L1 unless KC sits at its floor
                            assert!(b.kc == KC_MIN || b.kc * (mr + b.nr) * 4 <= l1, "{ctx}");
                            // the B block fits in half of L2 unless NCB sits at its floor
                            assert!(b.ncb == 2 * b.nr || b.ncb * b.kc * 4 <= l2 / 2, "{ctx}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn split_uses_threads_only_for_enough_work() {
        let blk = Blocking::derive(&crate::cpuinfo::DEFAULT, 8, 6);
        let p = blk.par_min_macs;
        let plan = |nb, m, n, k, t| Split::plan(nb, m, n, k, t, &blk, false, false);
        let whole = Split {
            tasks: 1,
            by_batch: true,
            split_n: false,
            parts: 1,
        };
        assert_eq!(plan(1, 1024, 1024, 1024, 1), whole);
        // too little work for a second thread: one task
        assert_eq!(plan(1, 8, 8, p / 64 + 1, 2), whole);
        // enough for two: rows (square), or columns when N is the larger, in up to
        // TASKS_PER_THREAD parts per thread of at least min_part (128 on AVX2)
        let two = Split {
            tasks: 2,
            by_batch: false,
            split_n: false,
            parts: 2,
        };
        let parts = |p| Split {
            tasks: p,
            parts: p,
            ..two
        };
        assert_eq!(plan(1, 1024, 1024, 1024, 2), parts(2 * TASKS_PER_THREAD));
        assert_eq!(plan(1, 512, 512, 512, 2), parts(512 / blk.min_part));
        assert_eq!(plan(1, 128, 128, 128, 2), two);
        assert_eq!(
            plan(1, 16, 4096, 1024, 2),
            Split {
                split_n: true,
                ..parts(2 * TASKS_PER_THREAD)
            }
        );
        // enough work for 2 of 8 threads only
        assert_eq!(plan(1, 64, 64, (2 * p).div_ceil(64 * 64), 8), two);
        // a batch: one range of products per thread
        assert_eq!(
            plan(8, 256, 256, 256, 2),
            Split {
                tasks: 2,
                by_batch: true,
                split_n: false,
                parts: 1
            }
        );
        // a few rows cannot be cut finer than micro-tiles
        assert_eq!(plan(1, 6, 6, 1 << 20, 4).parts, 1);
        // A's rows read in place (M in whole micro-panels: mr 6 here): columns, in parts no wider than DIRECT_A_MAX_N, while
        // there are at most TASKS_PER_THREAD of them per thread
        let with_a_rows = |nb, m, n, k, t| Split::plan(nb, m, n, k, t, &blk, true, false);
        let cols = |p| Split {
            split_n: true,
            ..parts(p)
        };
        assert_eq!(with_a_rows(1, 1026, 1024, 1024, 2), cols(4));
        assert_eq!(with_a_rows(1, 2046, 2048, 2048, 2), cols(8));
        assert_eq!(with_a_rows(1, 510, 512, 512, 2), cols(2));
        // (at least a part per useful thread)
        assert_eq!(with_a_rows(1, 300, 300, 1024, 4), cols(4));
        // wider: rows as before; narrow products read A in place with rows too
        assert_eq!(
            with_a_rows(1, 4098, 4096, 4096, 2),
            plan(1, 4098, 4096, 4096, 2)
        );
        assert_eq!(
            with_a_rows(1, 1024, 256, 1024, 2),
            plan(1, 1024, 256, 1024, 2)
        );
        // rows not in whole micro-panels: every column part would pack all of A
        assert_eq!(
            with_a_rows(1, 1030, 1024, 1024, 2),
            plan(1, 1030, 1024, 1024, 2)
        );
        // both operands' rows read in place by every part (narrow and short): parts of
        // whole micro-panels, TASKS_PER_THREAD per thread, where min_part gave one each
        let in_place = |nb, m, n, k, t| Split::plan(nb, m, n, k, t, &blk, true, true);
        assert_eq!(in_place(1, 128, 128, 128, 2), parts(2 * TASKS_PER_THREAD));
        assert_eq!(in_place(1, 256, 256, 256, 2), parts(2 * TASKS_PER_THREAD));
        assert_eq!(in_place(1, 96, 96, 2048, 2), parts(2 * TASKS_PER_THREAD));
        assert_eq!(plan(1, 96, 96, 2048, 2), two);
        // (18 rows: 3 panels of 6)
        assert_eq!(in_place(1, 18, 16, 1 << 16, 8), parts(3));
        // a part that would pack B (taller than DIRECT_B_MAX_M / 2, K past one slice), or
        // A (wider than DIRECT_A_MAX_N), keeps min_part
        assert_eq!(in_place(1, 2048, 256, 2048, 2), plan(1, 2048, 256, 2048, 2));
        assert_eq!(
            in_place(1, 1024, 1024, 1024, 2),
            with_a_rows(1, 1024, 1024, 1024, 2)
        );
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
            (100, 64, 700), // A in place but a last partial panel (packed), B in place
            (130, 96, 700), // the same with B packed
            (240, 96, 100),
            (20, 1000, 40), // N cut into equal blocks, an edge tile in the last
            (6, 25, 3001),  // the dot path (with B transposed): K slices, a K tail
            (9, 7, 2048),   // the dot path: a row and a column left over
            (1, 1, 4100),
            (16, 150, 2048), // the dot path at its thin limit
            (17, 16, 2100),
            (6, 600, 300), // one A panel (M < MR) packed, B read in place over two K slices
            (3, 1000, 25), // the same, a packed B block at the ragged end
            (13, 700, 40), // two A panels packed (one an edge), B read in place
            (16, 16, 16),  // the small path: attention's q @ k^T per (batch, head), B copied
            (9, 20, 16),   // the small path: N not whole vectors (B copied, padded)
            (5, 40, 12),   // the small path: pairs of vectors, a last one partial (AVX-512)
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
                            blk: None,
                            packed_b: None,
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

    #[test]
    fn a_batch_against_one_matrix_runs_as_one_product() {
        use crate::view::DType;
        // a (5, 7, 9) contiguous, b (9, 6) transposed (a weight (6, 9)) broadcast over 5
        let (nb, m, k, n) = (5, 7, 9, 6);
        let mut a: Vec<f32> = (0..nb * m * k).map(|i| (i % 17) as f32 - 8.0).collect();
        let mut w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
        let want: Vec<f32> = (0..nb * m * n)
            .map(|o| {
                let (row, j) = (o / n, o % n);
                (0..k).map(|p| a[row * k + p] * w[j * k + p]).sum()
            })
            .collect();
        let (ki, mi, ni) = (k as isize, m as isize, n as isize);
        let av = Arr::new(
            a.as_mut_ptr() as *mut u8,
            DType::F32,
            &[nb, m, k],
            &[mi * ki, ki, 1],
        );
        let bv = Arr::new(
            w.as_mut_ptr() as *mut u8,
            DType::F32,
            &[nb, k, n],
            &[0, 1, ki],
        );
        let mut c = vec![f32::NAN; nb * m * n];
        let cv = Arr::new(
            c.as_mut_ptr() as *mut u8,
            DType::F32,
            &[nb, m, n],
            &[mi * ni, ni, 1],
        );
        let (o1, a1, b1) = one_batch(&cv, &av, &bv).expect("folds");
        assert_eq!(
            (a1.shape(), b1.shape(), o1.shape()),
            (&[1, nb * m, k][..], &[1, k, n][..], &[1, nb * m, n][..])
        );
        for threads in [1, 2] {
            matmul(&Pool::new(threads), &cv, &av, &bv).unwrap();
            assert!(c
                .iter()
                .zip(&want)
                .all(|(x, y)| (x - y).abs() <= 1e-4 * (1.0 + y.abs())));
        }
        // a's batch not one run of rows (a transposed (m, nb, k) tensor): no fold
        let at = Arr::new(
            a.as_mut_ptr() as *mut u8,
            DType::F32,
            &[nb, m, k],
            &[ki, nb as isize * ki, 1],
        );
        assert!(one_batch(&cv, &at, &bv).is_none());
    }

    /// `len` multiples of 1/4 in [-1.5, 1.5], in a cycle of `modulo`: exact
    /// products, sums that depend on their order only through rounding
    fn ramp(len: usize, step: usize, modulo: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * step) % modulo) as f32 * 0.25 - 1.5)
            .collect()
    }

    /// a (m x k, row-major) @ b (k x n at row / column strides `bs`) through `matmul` on
    /// pools of 1, 2 and 3 threads: asserts that every cut gives the same bits and that they
    /// are the product within `rtol`
    fn same_bits_over_threads(
        (m, n, k): (usize, usize, usize),
        a: &mut [f32],
        b: &mut [f32],
        (brs, bcs): (usize, usize),
        rtol: f64,
    ) {
        use crate::view::DType;
        let av = Arr::new(
            a.as_mut_ptr() as *mut u8,
            DType::F32,
            &[1, m, k],
            &[(m * k) as isize, k as isize, 1],
        );
        let bv = Arr::new(
            b.as_mut_ptr() as *mut u8,
            DType::F32,
            &[1, k, n],
            &[(n * k) as isize, brs as isize, bcs as isize],
        );
        let mut outs = Vec::new();
        for threads in [1, 2, 3] {
            let mut c = vec![f32::NAN; m * n];
            let cv = Arr::new(
                c.as_mut_ptr() as *mut u8,
                DType::F32,
                &[1, m, n],
                &[(m * n) as isize, n as isize, 1],
            );
            matmul(&Pool::new(threads), &cv, &av, &bv).unwrap();
            outs.push(c);
        }
        let want = reference(m, n, k, a, k, 1, b, brs, bcs);
        for (x, y) in outs[0].iter().zip(&want) {
            assert!(
                (*x as f64 - y).abs() <= rtol * (1.0 + y.abs()),
                "{m}x{n}x{k}: {x} vs {y}"
            );
        }
        assert!(outs.iter().all(|c| c
            .iter()
            .zip(&outs[0])
            .all(|(x, y)| x.to_bits() == y.to_bits())));
    }

    #[test]
    fn row_parts_share_one_packed_b_bit_for_bit() {
        let blk = dispatch(Derived);
        // (m, n, k): ragged last part, last panel (n % NR) and last K slice; B row-major
        // and transposed (a Linear's weight). The packed values and the order of the sums
        // are one thread's, so every cut gives the same bits.
        for (m, n, k, bt) in [
            (1001, 300, 700, false),
            (1001, 300, 700, true),
            (1027, 777, 333, false),
        ] {
            let (mut a, mut b) = (ramp(m * k, 7, 13), ramp(k * n, 5, 11));
            let s = Split::plan(1, m, n, k, 2, &blk, true, !bt);
            assert!(shares_b(&s, 1, m, n, k, &blk, !bt), "{m}x{n}x{k}: {s:?}");
            let bs = if bt { (1, k) } else { (n, 1) };
            same_bits_over_threads((m, n, k), &mut a, &mut b, bs, 1e-4);
        }
        // B's rows read in place by every part: nothing shared
        let s = Split::plan(1, 256, 256, 256, 2, &blk, true, true);
        assert!(!shares_b(&s, 1, 256, 256, 256, &blk, true));
    }

    #[test]
    fn dot_path_products_are_cut_over_threads_bit_for_bit() {
        let blk = Blocking::derive(&crate::cpuinfo::DEFAULT, 8, 6);
        // conv1's weight gradient shape: columns, one part per thread, in pairs
        let (s, align) = Split::plan_dot(1, 6, 25, 43008, 2, &blk);
        assert_eq!(
            (s.parts, s.tasks, s.split_n, s.by_batch, align),
            (2, 2, true, false, 2)
        );
        // rows when M is the wide side; one part where one thread has all the work
        let (s, align) = Split::plan_dot(1, 150, 16, 6144, 4, &blk);
        assert_eq!((s.parts, s.split_n, align), (4, false, 4));
        assert_eq!(Split::plan_dot(1, 6, 25, 2048, 1, &blk).0.parts, 1);
        // (m, n, k): the wide side cut; odd sizes leave ragged last parts; every element is
        // the same dot whatever the cut
        for (m, n, k) in [(6, 25, 4099), (16, 150, 2048), (37, 5, 3001)] {
            // b (k, n) column-major: each column one contiguous run (the dot path's layout)
            let (mut a, mut bt) = (ramp(m * k, 7, 13), ramp(k * n, 5, 11));
            assert!(is_dot(
                m,
                n,
                k,
                &Mat::new(std::ptr::null(), k as isize, 1),
                &Mat::new(std::ptr::null(), 1, k as isize)
            ));
            same_bits_over_threads((m, n, k), &mut a, &mut bt, (1, k), 1e-3);
        }
    }
}
