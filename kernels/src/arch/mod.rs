//! Instruction sets: one `Simd` implementation per ISA, chosen once at run time.
//!
//! Every kernel is written once, generic over `S: Simd` (a vector of `S::W`
//! f32 lanes plus the handful of operations the kernels need), and compiled
//! once per ISA. The trick that makes this fast (the `pulp` / `matrixmultiply`
//! pattern): a kernel is a value implementing `Kernel`; `dispatch` calls
//! `run::<S>` from inside a `#[target_feature]` wrapper, and every generic
//! helper below is `#[inline(always)]`, so the whole kernel is inlined into a
//! function compiled with AVX-512 / AVX2+FMA enabled and the intrinsics become
//! single instructions. A helper that is not inlined would be compiled without
//! the feature and turn every intrinsic into a call: keep `#[inline(always)]`.
//!
//! Selection (`active`): AVX-512F (+AVX2+FMA) > AVX2+FMA > scalar on x86-64,
//! NEON on aarch64, scalar elsewhere. `TORCHIC_SIMD_SCALAR=1` forces scalar;
//! `TORCHIC_SIMD_ISA=avx2|scalar|...` forces a (supported) path, for tests.

use std::sync::atomic::{AtomicU8, Ordering};

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
#[cfg(target_arch = "aarch64")]
pub mod neon;
pub mod scalar;

/// A vector of `W` f32 lanes. All operations are `unsafe` because they are
/// only valid inside a function compiled for the ISA (see `dispatch`).
///
/// # Safety
/// Every method: call it only inside a function compiled for this ISA (`dispatch`
/// makes those); pointer arguments must be valid for the lanes read or written.
#[allow(clippy::missing_safety_doc)] // the one contract above covers every method
pub trait Simd: Copy + 'static {
    const NAME: &'static str;
    /// lanes per vector
    const W: usize;
    /// rows of the matmul microkernel (its width is 2 * W)
    const MR: usize;
    type F: Copy;
    /// a lane mask (result of a comparison)
    type M: Copy;

    unsafe fn splat(x: f32) -> Self::F;
    unsafe fn load(p: *const f32) -> Self::F;
    unsafe fn store(p: *mut f32, v: Self::F);
    /// A store that bypasses the caches (x86 non-temporal), for outputs too big to
    /// stay in cache: it saves the read-for-ownership of every line written. `p` must
    /// be aligned to the vector size; `stream_fence` must follow the last one before
    /// another thread may read the data. Other ISAs: a plain store.
    #[inline(always)]
    unsafe fn stream(p: *mut f32, v: Self::F) {
        Self::store(p, v)
    }
    #[inline(always)]
    unsafe fn stream_fence() {}
    /// Ask for the cache line holding `p` in L1 ahead of its use (x86: prefetcht0; a
    /// hint: never faults, may be ignored). Elsewhere nothing.
    #[inline(always)]
    unsafe fn prefetch(p: *const f32) {
        #[cfg(target_arch = "x86_64")]
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }
    unsafe fn add(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn sub(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn mul(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn div(a: Self::F, b: Self::F) -> Self::F;
    /// a * b + c (fused where the ISA has it)
    unsafe fn fma(a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `if a > b { a } else { b }` per lane (x86 semantics: b when unordered)
    unsafe fn max(a: Self::F, b: Self::F) -> Self::F;
    /// `if a < b { a } else { b }` per lane (b when unordered)
    unsafe fn min(a: Self::F, b: Self::F) -> Self::F;
    unsafe fn sqrt(a: Self::F) -> Self::F;
    unsafe fn abs(a: Self::F) -> Self::F;
    unsafe fn neg(a: Self::F) -> Self::F;
    /// round to nearest, ties to even
    unsafe fn round(a: Self::F) -> Self::F;
    /// 2^n for integral n in [-126, 127]
    unsafe fn pow2n(n: Self::F) -> Self::F;
    /// for positive normal x: (m, e) with x = m * 2^e, m in [0.5, 1)
    unsafe fn frexp(x: Self::F) -> (Self::F, Self::F);

    unsafe fn lt(a: Self::F, b: Self::F) -> Self::M;
    unsafe fn le(a: Self::F, b: Self::F) -> Self::M;
    unsafe fn eq(a: Self::F, b: Self::F) -> Self::M;
    /// true where a is NaN
    unsafe fn isnan(a: Self::F) -> Self::M;
    unsafe fn mand(a: Self::M, b: Self::M) -> Self::M;
    unsafe fn mor(a: Self::M, b: Self::M) -> Self::M;
    unsafe fn mnot(a: Self::M) -> Self::M;
    unsafe fn any(m: Self::M) -> bool;
    /// m ? a : b per lane
    unsafe fn select(m: Self::M, a: Self::F, b: Self::F) -> Self::F;

    unsafe fn hsum(a: Self::F) -> f32;
    /// horizontal max / min with the same lane semantics as `max` / `min`
    unsafe fn hmax(a: Self::F) -> f32;
    unsafe fn hmin(a: Self::F) -> f32;

    #[inline(always)]
    unsafe fn zero() -> Self::F {
        Self::splat(0.0)
    }
    /// load `n < W` floats, the rest of the lanes are `fill`
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize, fill: f32) -> Self::F {
        let mut buf = [fill; 16];
        std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
        Self::load(buf.as_ptr())
    }
    /// load `n <= W` floats (a row's last vector): all W, or `load_part` with `fill`
    #[inline(always)]
    unsafe fn load_upto(p: *const f32, n: usize, fill: f32) -> Self::F {
        if n == Self::W {
            Self::load(p)
        } else {
            Self::load_part(p, n, fill)
        }
    }
    /// store the first `n < W` lanes
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: Self::F, n: usize) {
        let mut buf = [0f32; 16];
        Self::store(buf.as_mut_ptr(), v);
        std::ptr::copy_nonoverlapping(buf.as_ptr(), p, n);
    }
    /// load W floats `s` elements apart (s may be 0 or negative)
    #[inline(always)]
    unsafe fn load_strided(p: *const f32, s: isize) -> Self::F {
        let mut buf = [0f32; 16];
        for (i, b) in buf.iter_mut().enumerate().take(Self::W) {
            *b = *p.offset(i as isize * s);
        }
        Self::load(buf.as_ptr())
    }
    /// NaN-propagating max / min (NumPy's maximum / minimum)
    #[inline(always)]
    unsafe fn max_nan(a: Self::F, b: Self::F) -> Self::F {
        Self::select(Self::isnan(a), a, Self::max(a, b))
    }
    #[inline(always)]
    unsafe fn min_nan(a: Self::F, b: Self::F) -> Self::F {
        Self::select(Self::isnan(a), a, Self::min(a, b))
    }
}

/// A kernel invocation: `run::<S>` holds the body, written once for all ISAs.
pub trait Kernel {
    type Out;
    fn run<S: Simd>(self) -> Self::Out;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Isa {
    Scalar = 1,
    Avx2 = 2,
    Avx512 = 3,
    Neon = 4,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2+fma",
            Isa::Avx512 => "avx512f",
            Isa::Neon => "neon",
        }
    }
    /// Can this machine run the ISA?
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
    /// Every ISA this machine can run, best first (tests run each).
    pub fn all_supported() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Scalar]
            .into_iter()
            .filter(|i| i.supported())
            .collect()
    }
}

static ACTIVE: AtomicU8 = AtomicU8::new(0);

fn detect() -> Isa {
    let forced_scalar = std::env::var("TORCHIC_SIMD_SCALAR")
        .map(|v| !v.is_empty() && v != "0")
        .unwrap_or(false);
    if forced_scalar {
        return Isa::Scalar;
    }
    if let Ok(want) = std::env::var("TORCHIC_SIMD_ISA") {
        let isa = match want.to_ascii_lowercase().as_str() {
            "scalar" => Some(Isa::Scalar),
            "avx2" | "avx2+fma" => Some(Isa::Avx2),
            "avx512" | "avx512f" => Some(Isa::Avx512),
            "neon" => Some(Isa::Neon),
            _ => None,
        };
        if let Some(isa) = isa {
            if isa.supported() {
                return isa;
            }
        }
    }
    Isa::all_supported()[0]
}

/// The ISA every kernel of this process uses (detected once).
pub fn active() -> Isa {
    match ACTIVE.load(Ordering::Relaxed) {
        1 => Isa::Scalar,
        2 => Isa::Avx2,
        3 => Isa::Avx512,
        4 => Isa::Neon,
        _ => {
            let isa = detect();
            ACTIVE.store(isa as u8, Ordering::Relaxed);
            isa
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<K: Kernel>(k: K) -> K::Out {
    k.run::<avx2::Avx2>()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512<K: Kernel>(k: K) -> K::Out {
    k.run::<avx512::Avx512>()
}

#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn run_neon<K: Kernel>(k: K) -> K::Out {
    k.run::<neon::Neon>()
}

/// Run a kernel on a given ISA (which must be `supported()`).
pub fn dispatch_on<K: Kernel>(isa: Isa, k: K) -> K::Out {
    match isa {
        // SAFETY: the ISA was checked by `supported()` when it was selected
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { run_avx512(k) },
        // SAFETY: as above: `supported()` checked the ISA
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { run_avx2(k) },
        // SAFETY: as above: `supported()` checked the ISA
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => unsafe { run_neon(k) },
        _ => k.run::<scalar::Scalar>(),
    }
}

/// Run a kernel on the active ISA.
#[inline]
pub fn dispatch<K: Kernel>(k: K) -> K::Out {
    dispatch_on(active(), k)
}
