//! Slurm's x87 80-bit `long double` arithmetic, where it decides discrete outcomes.
//!
//! Slurm computes Fair Tree's `U = usage / parent usage` and `level_fs = S / U` in `long double`
//! and tests ties with `==`. Siblings whose S/U are mathematically equal tie or not depending on
//! that rounding, so the tie decisions are reproduced with a software 80-bit float
//! (`rustc_apfloat`), round to nearest even, exactly as the x87 unit computes them.

use rustc_apfloat::ieee::{Double, X87DoubleExtended};
use rustc_apfloat::{Float, FloatConvert};

/// An x87 80-bit extended-precision value.
pub type X87 = X87DoubleExtended;

/// Widens an f64 exactly.
pub fn widen(v: f64) -> X87 {
    let mut loses = false;
    Double::from_bits(v.to_bits() as u128).convert(&mut loses).value
}

/// One x87 division, round to nearest even.
pub fn div(a: X87, b: X87) -> X87 {
    (a / b).value
}

/// One x87 addition, round to nearest even.
pub fn add(a: X87, b: X87) -> X87 {
    (a + b).value
}

/// An order-preserving integer key for non-negative, non-NaN x87 values (`+inf` included).
pub fn key(v: X87) -> u128 {
    v.to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x87_division_differs_from_f64_where_slurm_ties_differ() {
        // 22/17 computed two ways that are equal in exact arithmetic: uD2 = (40/170)/(20/110)
        // and uD3 = (50/170)/(25/110) from Slurm's test24.4. Both f64 and x87 keep them apart,
        // with uD3 larger (spec: they are not tied).
        let s2 = widen(40.0 / 170.0);
        let s3 = widen(50.0 / 170.0);
        let u2 = div(widen(20.0), widen(110.0));
        let u3 = div(widen(25.0), widen(110.0));
        assert!(key(div(s3, u3)) > key(div(s2, u2)));
    }

    #[test]
    fn widening_is_exact_and_keys_are_monotone() {
        let vals = [0.0, 1e-300, 0.5, 1.0, 3.0, 4294967294.0, 1e300, f64::INFINITY];
        for w in vals.windows(2) {
            assert!(key(widen(w[0])) < key(widen(w[1])));
        }
        assert_eq!(key(add(widen(1.0), widen(2.0))), key(widen(3.0)));
    }
}
