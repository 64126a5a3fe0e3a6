//! NEON: 4 f32 lanes (aarch64). Only called inside functions compiled with
//! `#[target_feature(enable = "neon")]`. (Written against core::arch::aarch64;
//! the CI machine is x86-64, so this path is compiled and tested on ARM hosts.)

use super::Simd;
use core::arch::aarch64::*;

#[derive(Clone, Copy)]
pub struct Neon;

impl Simd for Neon {
    const NAME: &'static str = "neon";
    const W: usize = 4;
    const MR: usize = 8;
    type F = float32x4_t;
    type M = uint32x4_t;

    #[inline(always)]
    unsafe fn splat(x: f32) -> float32x4_t {
        vdupq_n_f32(x)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> float32x4_t {
        vld1q_f32(p)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: float32x4_t) {
        vst1q_f32(p, v)
    }
    #[inline(always)]
    unsafe fn add(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vaddq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vsubq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vmulq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn div(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vdivq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn fma(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        vfmaq_f32(c, a, b)
    }
    #[inline(always)]
    unsafe fn max(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vbslq_f32(vcgtq_f32(a, b), a, b)
    }
    #[inline(always)]
    unsafe fn min(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vbslq_f32(vcltq_f32(a, b), a, b)
    }
    #[inline(always)]
    unsafe fn sqrt(a: float32x4_t) -> float32x4_t {
        vsqrtq_f32(a)
    }
    #[inline(always)]
    unsafe fn abs(a: float32x4_t) -> float32x4_t {
        vabsq_f32(a)
    }
    #[inline(always)]
    unsafe fn neg(a: float32x4_t) -> float32x4_t {
        vnegq_f32(a)
    }
    #[inline(always)]
    unsafe fn round(a: float32x4_t) -> float32x4_t {
        vrndnq_f32(a)
    }
    #[inline(always)]
    unsafe fn pow2n(n: float32x4_t) -> float32x4_t {
        let i = vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127));
        vreinterpretq_f32_s32(vshlq_n_s32::<23>(i))
    }
    #[inline(always)]
    unsafe fn frexp(x: float32x4_t) -> (float32x4_t, float32x4_t) {
        let bits = vreinterpretq_u32_f32(x);
        let e = vsubq_s32(
            vreinterpretq_s32_u32(vandq_u32(vshrq_n_u32::<23>(bits), vdupq_n_u32(0xff))),
            vdupq_n_s32(126),
        );
        let m = vorrq_u32(
            vandq_u32(bits, vdupq_n_u32(0x807f_ffff)),
            vdupq_n_u32(0x3f00_0000),
        );
        (vreinterpretq_f32_u32(m), vcvtq_f32_s32(e))
    }
    #[inline(always)]
    unsafe fn lt(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        vcltq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn le(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        vcleq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn eq(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        vceqq_f32(a, b)
    }
    #[inline(always)]
    unsafe fn isnan(a: float32x4_t) -> uint32x4_t {
        vmvnq_u32(vceqq_f32(a, a))
    }
    #[inline(always)]
    unsafe fn mand(a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        vandq_u32(a, b)
    }
    #[inline(always)]
    unsafe fn mor(a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        vorrq_u32(a, b)
    }
    #[inline(always)]
    unsafe fn mnot(a: uint32x4_t) -> uint32x4_t {
        vmvnq_u32(a)
    }
    #[inline(always)]
    unsafe fn any(m: uint32x4_t) -> bool {
        vmaxvq_u32(m) != 0
    }
    #[inline(always)]
    unsafe fn select(m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        vbslq_f32(m, a, b)
    }
    #[inline(always)]
    unsafe fn hsum(a: float32x4_t) -> f32 {
        vaddvq_f32(a)
    }
    #[inline(always)]
    unsafe fn hmax(a: float32x4_t) -> f32 {
        let mut buf = [0f32; 4];
        vst1q_f32(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m > x { m } else { x };
        }
        m
    }
    #[inline(always)]
    unsafe fn hmin(a: float32x4_t) -> f32 {
        let mut buf = [0f32; 4];
        vst1q_f32(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m < x { m } else { x };
        }
        m
    }
}
