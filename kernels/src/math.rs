//! Vectorized exp, log, tanh, sigmoid: written once over `Simd`, so every ISA
//! (and the scalar path) evaluates the same polynomials.
//!
//! exp: Cody-Waite range reduction x = n ln2 + r (ln2 split in two so n*C1 is
//! exact without FMA), a degree-6 minimax polynomial on |r| <= ln2/2 (Cephes
//! `expf`), and 2^n applied as two factors 2^(n/2) 2^(n-n/2) so results in the
//! subnormal range round only once and n = 128 does not overflow the exponent
//! field. <= 2 ULP against float64 (tests/simd checks 3 over a dense grid).
//! log: frexp to m in [sqrt(1/2), sqrt(2)), degree-9 polynomial in m-1 (Cephes
//! `logf`), subnormal inputs rescaled by 2^23 first. tanh: odd polynomial for
//! |x| < 0.625, 1 - 2/(exp(2|x|)+1) above. sigmoid: 1/(1+exp(-x)).
//! Special values: exp(-inf) = 0, exp(+inf) = inf, overflow -> inf, underflow
//! -> subnormal / 0; log(0) = -inf, log(x<0) = NaN, log(inf) = inf; NaN -> NaN.

use crate::arch::Simd;

/// exp of a clamped argument, split: (e^r, n) with exp(xc) = e^r * 2^n, |r| <= ln2/2.
/// Cody-Waite range reduction, then a degree-6 polynomial for e^r.
#[inline(always)]
unsafe fn exp_reduced<S: Simd>(xc: S::F) -> (S::F, S::F) {
    let n = S::round(S::mul(xc, S::splat(std::f32::consts::LOG2_E)));
    let r = S::fma(n, S::splat(-0.693359375), xc);
    let r = S::fma(n, S::splat(2.12194440e-4), r);
    let mut p = S::splat(1.9875691500e-4);
    p = S::fma(p, r, S::splat(1.3981999507e-3));
    p = S::fma(p, r, S::splat(8.3334519073e-3));
    p = S::fma(p, r, S::splat(4.1665795894e-2));
    p = S::fma(p, r, S::splat(1.6666665459e-1));
    p = S::fma(p, r, S::splat(5.0000001201e-1));
    (S::add(S::fma(p, S::mul(r, r), r), S::splat(1.0)), n)
}

#[inline(always)]
pub unsafe fn exp<S: Simd>(x: S::F) -> S::F {
    let nan = S::isnan(x);
    let xc = S::min(S::max(x, S::splat(-104.0)), S::splat(88.8));
    let (y, n) = exp_reduced::<S>(xc);
    // 2^n in two halves: n reaches -150 for subnormal results, past one float's range
    let n1 = S::round(S::mul(n, S::splat(0.5)));
    let n2 = S::sub(n, n1);
    let y = S::mul(S::mul(y, S::pow2n(n1)), S::pow2n(n2));
    S::select(nan, x, y)
}

/// exp(x) for x <= 0 that is not NaN (-inf gives 0): the softmax case, x - max.
/// The same polynomial as `exp`, without its NaN and overflow handling, and
/// results below the smallest normal float flushed to 0 (one scaling instead of
/// two). Within 3 ULP of float64 wherever the result is a normal float.
#[inline(always)]
pub unsafe fn exp_nonpositive<S: Simd>(x: S::F) -> S::F {
    // just below ln(f32::MIN_POSITIVE) = -87.3365447...: from here up, 2^n is normal
    const MIN_NORMAL_ARG: f32 = -87.336_55;
    let tiny = S::lt(x, S::splat(MIN_NORMAL_ARG));
    let (y, n) = exp_reduced::<S>(S::max(x, S::splat(MIN_NORMAL_ARG)));
    S::select(tiny, S::zero(), S::mul(y, S::pow2n(n)))
}

#[inline(always)]
pub unsafe fn log<S: Simd>(x: S::F) -> S::F {
    let zero = S::zero();
    let one = S::splat(1.0);
    let small = S::lt(x, S::splat(1.17549435e-38));
    let xs = S::select(small, S::mul(x, S::splat(8388608.0)), x);
    let (m, e) = S::frexp(xs);
    let e = S::sub(e, S::select(small, S::splat(23.0), zero));
    let lo = S::lt(m, S::splat(std::f32::consts::FRAC_1_SQRT_2));
    let e = S::sub(e, S::select(lo, one, zero));
    let m = S::sub(S::select(lo, S::add(m, m), m), one);
    let z = S::mul(m, m);
    let mut p = S::splat(7.0376836292e-2);
    p = S::fma(p, m, S::splat(-1.1514610310e-1));
    p = S::fma(p, m, S::splat(1.1676998740e-1));
    p = S::fma(p, m, S::splat(-1.2420140846e-1));
    p = S::fma(p, m, S::splat(1.4249322787e-1));
    p = S::fma(p, m, S::splat(-1.6668057665e-1));
    p = S::fma(p, m, S::splat(2.0000714765e-1));
    p = S::fma(p, m, S::splat(-2.4999993993e-1));
    p = S::fma(p, m, S::splat(3.3333331174e-1));
    let mut y = S::mul(S::mul(p, m), z);
    y = S::fma(e, S::splat(-2.12194440e-4), y);
    y = S::fma(z, S::splat(-0.5), y);
    let mut r = S::add(m, y);
    r = S::fma(e, S::splat(0.693359375), r);
    // special values
    let inf = S::splat(f32::INFINITY);
    r = S::select(S::eq(x, inf), inf, r);
    r = S::select(S::eq(x, zero), S::splat(f32::NEG_INFINITY), r);
    r = S::select(S::mor(S::lt(x, zero), S::isnan(x)), S::splat(f32::NAN), r);
    r
}

#[inline(always)]
pub unsafe fn tanh<S: Simd>(x: S::F) -> S::F {
    let a = S::abs(x);
    let one = S::splat(1.0);
    let e = exp::<S>(S::add(a, a));
    let big = S::sub(one, S::div(S::splat(2.0), S::add(e, one)));
    let big = S::select(S::lt(x, S::zero()), S::neg(big), big);
    let s = S::mul(x, x);
    let mut p = S::splat(-5.70498872745e-3);
    p = S::fma(p, s, S::splat(2.06390887954e-2));
    p = S::fma(p, s, S::splat(-5.37397155531e-2));
    p = S::fma(p, s, S::splat(1.33314422036e-1));
    p = S::fma(p, s, S::splat(-3.33332819422e-1));
    let small = S::fma(S::mul(p, s), x, x);
    let small = S::select(S::eq(x, S::zero()), x, small); // tanh(-0) = -0
    S::select(S::lt(a, S::splat(0.625)), small, big)
}

#[inline(always)]
pub unsafe fn sigmoid<S: Simd>(x: S::F) -> S::F {
    let one = S::splat(1.0);
    S::div(one, S::add(one, exp::<S>(S::neg(x))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa, Kernel};

    struct Map<'a>(&'a [f32], &'a mut [f32], u8);
    impl Kernel for Map<'_> {
        type Out = ();
        fn run<S: Simd>(self) {
            let w = S::W;
            let n = self.0.len() / w * w;
            unsafe {
                for i in (0..n).step_by(w) {
                    let x = S::load(self.0.as_ptr().add(i));
                    let y = match self.2 {
                        0 => exp::<S>(x),
                        1 => log::<S>(x),
                        2 => tanh::<S>(x),
                        3 => sigmoid::<S>(x),
                        _ => exp_nonpositive::<S>(x),
                    };
                    S::store(self.1.as_mut_ptr().add(i), y);
                }
            }
        }
    }

    fn ulps(got: f32, want: f64) -> f64 {
        if want.is_nan() {
            return if got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        let w = want as f32; // rounds to nearest; past f32::MAX it is inf
        if w.is_infinite() || got.is_infinite() {
            return if got == w { 0.0 } else { f64::INFINITY };
        }
        let ulp = if w == 0.0 || w.abs() < f32::MIN_POSITIVE {
            f32::from_bits(1) as f64
        } else {
            let b = w.abs().to_bits();
            (f32::from_bits(b + 1) - f32::from_bits(b)) as f64
        };
        (got as f64 - want).abs() / ulp
    }

    fn grid() -> Vec<f32> {
        let mut v = Vec::new();
        let mut x = -110.0f32;
        while x < 95.0 {
            v.push(x);
            x += 0.0137;
        }
        v.extend_from_slice(&[
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            88.72,
            88.73,
            -87.3,
            -103.0,
            1e-30,
            -1e-30,
            1e-45,
            f32::MIN_POSITIVE,
            f32::MAX,
        ]);
        while v.len() % 16 != 0 {
            v.push(1.0);
        }
        v
    }

    #[test]
    fn exp_log_within_3_ulp_every_isa() {
        let xs = grid();
        let lx: Vec<f32> = xs
            .iter()
            .map(|x| x.abs() * 1e-3f32.powi(((*x as i32).rem_euclid(13)) - 6))
            .chain(xs.iter().copied())
            .collect();
        for isa in Isa::all_supported() {
            let mut out = vec![0f32; xs.len()];
            dispatch_on(isa, Map(&xs, &mut out, 0));
            for (x, y) in xs.iter().zip(&out) {
                let u = ulps(*y, (*x as f64).exp());
                assert!(u <= 3.0, "{:?} exp({x}) = {y}, {u} ulp", isa);
            }
            let mut out = vec![0f32; lx.len()];
            dispatch_on(isa, Map(&lx, &mut out, 1));
            for (x, y) in lx.iter().zip(&out) {
                let want = if *x < 0.0 { f64::NAN } else { (*x as f64).ln() };
                let u = ulps(*y, want);
                assert!(u <= 3.0, "{:?} log({x}) = {y}, {u} ulp", isa);
            }
        }
    }

    #[test]
    fn exp_nonpositive_within_3_ulp_of_normal_results_every_isa() {
        let xs: Vec<f32> = grid()
            .into_iter()
            .filter(|x| *x <= 0.0)
            .chain([f32::NEG_INFINITY, -87.33, -87.32, -0.0])
            .collect::<Vec<_>>()
            .chunks(16)
            .filter(|c| c.len() == 16)
            .flatten()
            .copied()
            .collect();
        for isa in Isa::all_supported() {
            let mut out = vec![0f32; xs.len()];
            dispatch_on(isa, Map(&xs, &mut out, 4));
            for (x, y) in xs.iter().zip(&out) {
                let want = (*x as f64).exp();
                if want >= f32::MIN_POSITIVE as f64 {
                    let u = ulps(*y, want);
                    assert!(u <= 3.0, "{:?} exp_nonpositive({x}) = {y}, {u} ulp", isa);
                } else {
                    // below the smallest normal float: 0 or (at the boundary) that float
                    assert!(
                        *y == 0.0 || *y <= 1.2e-38,
                        "{:?} exp_nonpositive({x}) = {y}",
                        isa
                    );
                }
            }
        }
    }

    #[test]
    fn tanh_sigmoid_within_1e6_every_isa() {
        let xs = grid();
        for isa in Isa::all_supported() {
            for (k, f) in [
                (2u8, f64::tanh as fn(f64) -> f64),
                (3u8, |x: f64| 1.0 / (1.0 + (-x).exp())),
            ] {
                let mut out = vec![0f32; xs.len()];
                dispatch_on(isa, Map(&xs, &mut out, k));
                for (x, y) in xs.iter().zip(&out) {
                    let want = f(*x as f64);
                    if want.is_nan() {
                        assert!(y.is_nan());
                    } else {
                        assert!(
                            (*y as f64 - want).abs() <= 1e-6,
                            "{:?} op {k} ({x}) = {y} vs {want}",
                            isa
                        );
                    }
                }
            }
        }
    }
}
