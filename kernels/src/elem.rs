//! Element types of every dtype code (docs/DTYPES.md) and the casts between them.
//!
//! `Elem` is one dtype's element as kernels read and write it: f32, f64, i32, i64, u8, i8,
//! i16 as themselves, bool / float16 / bfloat16 as `Bool` / `F16` / `Bf16` (their bits).
//! Every element converts to a wide value (f64 for floats, exact for every narrower float;
//! i64 for ints and bool) and from one, with PyTorch's casts: float -> int truncates toward
//! zero (i32 / i64 saturate, NaN -> 0, as Rust's `as`; narrower ints wrap from i64), -> bool
//! is != 0, bool -> 1 / 0, narrowing ints wrap, -> f16 / bf16 round to nearest even (through
//! f32, as PyTorch's c10::Half / c10::BFloat16 do). The generic kernels (`typed`) are
//! monomorphized per element type; `with_elem!` turns a runtime DType into a type.

use crate::view::DType;

pub trait Elem: Copy + Send + Sync + 'static {
    const DT: DType;
    /// a float dtype (its wide value is `to_f64`; else `to_i64`)
    const FLOAT: bool;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn from_f64(x: f64) -> Self;
    fn from_i64(x: i64) -> Self;
    /// PyTorch's cast from any element type
    #[inline(always)]
    fn cast<S: Elem>(s: S) -> Self {
        if S::FLOAT {
            Self::from_f64(s.to_f64())
        } else {
            Self::from_i64(s.to_i64())
        }
    }
    /// read element `i` of `p` (any alignment)
    ///
    /// # Safety
    /// `p.offset(i)` is a readable element of this type
    #[inline(always)]
    unsafe fn get(p: *const u8, i: isize) -> Self {
        (p as *const Self).offset(i).read_unaligned()
    }
    /// # Safety
    /// `p.offset(i)` is a writable element of this type
    #[inline(always)]
    unsafe fn put(p: *mut u8, i: isize, v: Self) {
        (p as *mut Self).offset(i).write_unaligned(v)
    }
}

macro_rules! int_elem {
    ($t:ty, $dt:ident) => {
        impl Elem for $t {
            const DT: DType = DType::$dt;
            const FLOAT: bool = false;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                // i32 / i64 saturate (NaN -> 0); narrower ints wrap from i64
                if std::mem::size_of::<$t>() >= 4 {
                    x as $t
                } else {
                    x as i64 as $t
                }
            }
            #[inline(always)]
            fn from_i64(x: i64) -> Self {
                x as $t
            }
        }
    };
}
int_elem!(i32, I32);
int_elem!(i64, I64);
int_elem!(u8, U8);
int_elem!(i8, I8);
int_elem!(i16, I16);

macro_rules! float_elem {
    ($t:ty, $dt:ident) => {
        impl Elem for $t {
            const DT: DType = DType::$dt;
            const FLOAT: bool = true;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn from_i64(x: i64) -> Self {
                x as $t
            }
        }
    };
}
float_elem!(f32, F32);
float_elem!(f64, F64);

/// a bool element: one byte, 0 or 1 (any nonzero byte reads as true)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Bool(pub u8);

impl Elem for Bool {
    const DT: DType = DType::B8;
    const FLOAT: bool = false;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        (self.0 != 0) as u8 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        (self.0 != 0) as i64
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Bool((x != 0.0) as u8)
    }
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        Bool((x != 0) as u8)
    }
}

/// an IEEE binary16 element (its bits)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct F16(pub u16);

/// a bfloat16 element: the high 16 bits of a float32
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Bf16(pub u16);

/// float32 -> binary16, round to nearest even (overflow -> inf, NaN stays NaN)
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign
            | 0x7c00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1u32 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1; // (a carry into the exponent is right, up to inf)
    }
    sign | r as u16
}

/// binary16 -> float32 (exact)
pub fn f16_to_f32(h: u16) -> f32 {
    let neg = h & 0x8000 != 0;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let sign = if neg { 0x8000_0000u32 } else { 0 };
    if exp == 0 {
        let v = man as f32 * (1.0 / 16_777_216.0); // man * 2^-24
        return if neg { -v } else { v };
    }
    if exp == 0x1f {
        return f32::from_bits(sign | 0x7f80_0000 | (man << 13));
    }
    f32::from_bits(sign | ((exp + 112) << 23) | (man << 13))
}

/// float32 -> bfloat16, round to nearest even (NaN stays a quiet NaN)
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

impl Elem for F16 {
    const DT: DType = DType::F16;
    const FLOAT: bool = true;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16_to_f32(self.0) as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        f16_to_f32(self.0) as i64
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        F16(f32_to_f16(x as f32))
    }
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        F16(f32_to_f16(x as f32))
    }
}

impl Elem for Bf16 {
    const DT: DType = DType::BF16;
    const FLOAT: bool = true;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        bf16_to_f32(self.0) as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        bf16_to_f32(self.0) as i64
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Bf16(f32_to_bf16(x as f32))
    }
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        Bf16(f32_to_bf16(x as f32))
    }
}

/// `with_elem!(dtype, T, expr)`: `expr` with `T` the element type of the runtime `dtype`
#[macro_export]
macro_rules! with_elem {
    ($dt:expr, $t:ident, $body:expr) => {
        match $dt {
            $crate::view::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::view::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::view::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::view::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::view::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::view::DType::I8 => {
                type $t = i8;
                $body
            }
            $crate::view::DType::I16 => {
                type $t = i16;
                $body
            }
            $crate::view::DType::B8 => {
                type $t = $crate::elem::Bool;
                $body
            }
            $crate::view::DType::F16 => {
                type $t = $crate::elem::F16;
                $body
            }
            $crate::view::DType::BF16 => {
                type $t = $crate::elem::Bf16;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_to_nearest_even() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#x} {f}");
            }
            let g = bf16_to_f32(h);
            if !g.is_nan() {
                assert_eq!(f32_to_bf16(g), h);
            }
        }
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00); // tie to even: down
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02); // tie to even: up
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds to inf
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0); // half the least subnormal: to even 0
        assert_eq!(f32_to_f16(1.5 * 2f32.powi(-25)), 1);
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
    }

    #[test]
    fn casts_follow_pytorch() {
        assert_eq!(i32::cast(-2.7f64), -2);
        assert_eq!(i32::cast(f64::NAN), 0);
        assert_eq!(i32::cast(1e20f64), i32::MAX);
        assert_eq!(u8::cast(300i64), 44);
        assert_eq!(i8::cast(-129i32), 127);
        assert_eq!(u8::cast(-1.0f32), 255);
        assert_eq!(Bool::cast(0.1f32), Bool(1));
        assert_eq!(Bool::cast(f64::NAN), Bool(1));
        assert_eq!(f32::cast(Bool(1)), 1.0);
        assert_eq!(i64::cast(Bool(0)), 0);
        assert_eq!(f32::cast(i64::MAX), 9.223372e18);
        assert_eq!(f64::cast(F16(0x3c00)), 1.0);
        assert_eq!(Bf16::cast(1.0f64), Bf16(0x3f80));
    }
}
