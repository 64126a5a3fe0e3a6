//! The portable path: one f32 per "vector". Same algorithms as the SIMD paths
//! (the polynomials in math.rs are shared), without fused multiply-add.

use super::Simd;

#[derive(Clone, Copy)]
pub struct Scalar;

impl Simd for Scalar {
    const NAME: &'static str = "scalar";
    const W: usize = 1;
    const MR: usize = 4;
    type F = f32;
    type M = bool;

    #[inline(always)]
    unsafe fn splat(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> f32 {
        *p
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: f32) {
        *p = v
    }
    #[inline(always)]
    unsafe fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    unsafe fn sub(a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    unsafe fn mul(a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    unsafe fn div(a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    unsafe fn fma(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
    #[inline(always)]
    unsafe fn max(a: f32, b: f32) -> f32 {
        if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn min(a: f32, b: f32) -> f32 {
        if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn sqrt(a: f32) -> f32 {
        a.sqrt()
    }
    #[inline(always)]
    unsafe fn abs(a: f32) -> f32 {
        f32::from_bits(a.to_bits() & 0x7fff_ffff)
    }
    #[inline(always)]
    unsafe fn neg(a: f32) -> f32 {
        f32::from_bits(a.to_bits() ^ 0x8000_0000)
    }
    #[inline(always)]
    unsafe fn round(a: f32) -> f32 {
        a.round_ties_even()
    }
    #[inline(always)]
    unsafe fn pow2n(n: f32) -> f32 {
        f32::from_bits(((n as i32 + 127) as u32) << 23)
    }
    #[inline(always)]
    unsafe fn frexp(x: f32) -> (f32, f32) {
        let bits = x.to_bits();
        let e = ((bits >> 23) & 0xff) as i32 - 126;
        (f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000), e as f32)
    }
    #[inline(always)]
    unsafe fn lt(a: f32, b: f32) -> bool {
        a < b
    }
    #[inline(always)]
    unsafe fn le(a: f32, b: f32) -> bool {
        a <= b
    }
    #[inline(always)]
    unsafe fn eq(a: f32, b: f32) -> bool {
        a == b
    }
    #[inline(always)]
    unsafe fn isnan(a: f32) -> bool {
        a.is_nan()
    }
    #[inline(always)]
    unsafe fn mand(a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    unsafe fn mor(a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    unsafe fn mnot(a: bool) -> bool {
        !a
    }
    #[inline(always)]
    unsafe fn any(m: bool) -> bool {
        m
    }
    #[inline(always)]
    unsafe fn select(m: bool, a: f32, b: f32) -> f32 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn hsum(a: f32) -> f32 {
        a
    }
    #[inline(always)]
    unsafe fn hmax(a: f32) -> f32 {
        a
    }
    #[inline(always)]
    unsafe fn hmin(a: f32) -> f32 {
        a
    }
}
