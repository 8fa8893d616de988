//! An exact, order-independent sum of non-negative charges: the usage of an association is the
//! same bits however its job records are cut into row groups, files, threads or cluster tasks,
//! and in whatever order the partial sums meet.
//!
//! Floating-point addition is not associative, so summing charges in a different order (another
//! partitioning, another worker count) changes the last bits. Here each charge is added exactly
//! to a 256-bit fixed-point integer counting units of 2^-160, and only the final total is rounded
//! (to nearest, ties to even) to an `f64`. Integer addition is associative and commutative, so
//! any grouping gives the same total. Hand-written because the fixed range is all usage needs:
//! totals below 2^96 billing-seconds (a sum of 10^10 records of 10^9 billing-seconds each is
//! about 2^63), charges kept whole down to 2^-107 (bits below 2^-160 of smaller ones, a job
//! decayed for a hundred half-lives, are dropped, the same way in every order), where a general
//! exact accumulator covers all of `f64`'s 2^±1023 at eight times the size.

/// Limbs of 64 bits.
const LIMBS: usize = 4;

/// Bits below the binary point: the accumulator counts units of 2^-160.
const FRACTION_BITS: i32 = 160;

/// Bits of the accumulator.
const BITS: i32 = 64 * LIMBS as i32;

/// A charge the accumulator cannot hold (2^96 or more, negative, or not a number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutOfRange(pub f64);

/// A sum of non-negative `f64` values, exact to 2^-160: 256 bits, least significant limb first.
///
/// # Example
/// ```
/// use fairshare_engine::usage::exact_sum::ExactSum;
/// let (mut a, mut b) = (ExactSum::default(), ExactSum::default());
/// for x in [1e16, 1.0, 1.0] { a.add(x).unwrap(); }       // in f64: 1e16 + 1 + 1 = 1e16
/// for x in [1.0, 1.0, 1e16] { b.add(x).unwrap(); }       // in f64: 1e16 + 2
/// assert_eq!(a, b);
/// assert_eq!(a.to_f64(), 1e16 + 2.0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ExactSum([u64; LIMBS]);

impl ExactSum {
    /// The sum of one value.
    ///
    /// # Errors
    /// As [`ExactSum::add`].
    pub fn of(x: f64) -> Result<Self, OutOfRange> {
        let mut s = ExactSum::default();
        s.add(x)?;
        Ok(s)
    }

    /// Whether [`ExactSum::add`] takes `x`: 0 ≤ `x` < 2^96 (or -0), checked without adding.
    pub fn holds(x: f64) -> bool {
        x == 0.0 || (x > 0.0 && x < f64::from_bits(((1023 + BITS - FRACTION_BITS) as u64) << 52))
    }

    /// Adds `x`, its bits below 2^-160 dropped. A sum reaching 2^96 stays there, saturated
    /// ([`ExactSum::is_saturated`]): since every value is non-negative, a total reaches 2^96 in
    /// one grouping of the values exactly when it does in every other.
    ///
    /// # Errors
    /// `x` negative (other than -0), not finite, or 2^96 or more; the sum is then unchanged.
    #[inline]
    pub fn add(&mut self, x: f64) -> Result<(), OutOfRange> {
        if !ExactSum::holds(x) {
            return Err(OutOfRange(x));
        }
        // No branch on the value's kind (normal, subnormal, zero), on where it lands nor on how
        // far the carry goes, and no addend built in memory: values come in any order, and a
        // charge under `limits` adds seven per record. An addend written to the stack and read
        // back took ~6.3 ns an add in cache (criterion's `exact_sum`), these selects ~4.4 ns.
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as u32;
        // A subnormal (or zero) has no hidden bit and the exponent of the smallest normal.
        let mantissa = (bits & ((1 << 52) - 1)) | (u64::from(biased != 0) << 52);
        // x = mantissa · 2^(exponent) = mantissa · 2^(shift - 64) units, with `shift` =
        // exponent + 160 + 64, at most 267 (`holds`): limb `shift / 64` of the accumulator with a
        // limb below the unit prepended, whose bits are dropped (all of them for `shift` <= 11, so
        // smaller shifts can stop at 0), then the carry.
        let shift = (biased.max(1) + FRACTION_BITS as u32 + 64).saturating_sub(1075);
        let (limb, within) = (shift / 64, shift % 64);
        let low = mantissa << within;
        // The bits shifted past the limb; two shifts since a shift by 64 is not one.
        let high = (mantissa >> 1) >> (63 - within);
        let part = |i: u32| {
            // Real limb i is limb i + 1 counted with the dropped one: `low` lands there when the
            // value's limb is i + 1, `high` when it is i.
            (low & 0u64.wrapping_sub(u64::from(limb == i + 1))) | (high & 0u64.wrapping_sub(u64::from(limb == i)))
        };
        self.0 = add_limbs(self.0, [part(0), part(1), part(2), part(3)]);
        Ok(())
    }

    /// Adds another sum (merging two partial sums), saturating as [`ExactSum::add`] does.
    pub fn merge(&mut self, other: &ExactSum) {
        self.0 = add_limbs(self.0, other.0);
    }

    /// Whether the sum reached 2^96 (and is no longer exact).
    pub fn is_saturated(&self) -> bool {
        self.0 == [u64::MAX; LIMBS]
    }

    /// The sum rounded to the nearest `f64` (ties to even).
    pub fn to_f64(&self) -> f64 {
        let Some(limb) = self.0.iter().rposition(|&l| l != 0) else { return 0.0 };
        let top = 64 * limb as u32 + 63 - self.0[limb].leading_zeros();
        if top < 53 {
            // Exact: an integer below 2^53 units.
            return self.0[0] as f64 * pow2(-FRACTION_BITS);
        }
        // The 53 bits from `top` down, then round on the bits below them.
        let low = top - 52;
        let mut mantissa = shifted(self.0, low) & ((1 << 53) - 1);
        let half = shifted(self.0, low - 1) & 1 == 1;
        let sticky = any_below(self.0, low - 1);
        if half && (sticky || mantissa & 1 == 1) {
            mantissa += 1; // 2^53 at most: still exact as f64
        }
        mantissa as f64 * pow2(low as i32 - FRACTION_BITS)
    }

    /// The limbs, least significant first (to ship a partial sum).
    pub fn limbs(&self) -> [u64; LIMBS] {
        self.0
    }

    /// A sum from its limbs ([`ExactSum::limbs`]).
    pub fn from_limbs(limbs: [u64; LIMBS]) -> Self {
        ExactSum(limbs)
    }
}

/// The low 64 bits of `v >> n` (n < 256).
fn shifted(v: [u64; LIMBS], n: u32) -> u64 {
    let (limb, within) = ((n / 64) as usize, n % 64);
    let low = v[limb] >> within;
    let high = match (within, v.get(limb + 1)) {
        (0, _) | (_, None) => 0,
        (_, Some(&next)) => next << (64 - within),
    };
    low | high
}

/// Whether any of the `n` lowest bits of `v` is set.
fn any_below(v: [u64; LIMBS], n: u32) -> bool {
    let (limb, within) = ((n / 64) as usize, n % 64);
    v[..limb].iter().any(|&l| l != 0) || (within != 0 && v[limb] & ((1 << within) - 1) != 0)
}

/// `a + b`, saturated at 2^256 - 1.
#[inline]
fn add_limbs(a: [u64; LIMBS], b: [u64; LIMBS]) -> [u64; LIMBS] {
    let mut sum = [0u64; LIMBS];
    let mut carry = false;
    for i in 0..LIMBS {
        let (s, c1) = a[i].overflowing_add(b[i]);
        let (s, c2) = s.overflowing_add(u64::from(carry));
        sum[i] = s;
        carry = c1 | c2;
    }
    if carry { [u64::MAX; LIMBS] } else { sum }
}

/// 2^e, exactly (|e| stays far from the exponent range here).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of awkward values: wide exponents, long mantissas.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let mantissa = (s >> 11) as f64 / (1u64 << 53) as f64;
                mantissa * pow2(((s >> 3) % 120) as i32 - 60)
            })
            .collect()
    }

    #[test]
    fn any_order_and_grouping_gives_the_same_bits() {
        let xs = values(5000, 7);
        let mut forward = ExactSum::default();
        xs.iter().for_each(|&x| forward.add(x).unwrap());
        let mut backward = ExactSum::default();
        xs.iter().rev().for_each(|&x| backward.add(x).unwrap());
        assert_eq!(forward, backward);
        for parts in [1, 3, 7, 30] {
            let mut merged = ExactSum::default();
            for chunk in xs.chunks(xs.len().div_ceil(parts)).rev() {
                let mut partial = ExactSum::default();
                chunk.iter().for_each(|&x| partial.add(x).unwrap());
                merged.merge(&partial);
            }
            assert_eq!(merged, forward, "{parts} parts");
        }
        // Plain f64 sums in the two orders differ: the test is not vacuous.
        let (f, b): (f64, f64) = (xs.iter().sum(), xs.iter().rev().sum());
        assert_ne!(f.to_bits(), b.to_bits());
        assert!(((forward.to_f64() - f) / f).abs() < 1e-12);
    }

    #[test]
    fn rounds_to_nearest_even_like_f64_addition_of_two() {
        // Two values whose f64 sum rounds: the exact sum rounds the same way.
        for (a, b) in [(1.0, pow2(-53)), (1.0 + pow2(-52), pow2(-53)), (1.0, 3.0 * pow2(-54)), (1e16, 1.0), (0.1, 0.2)]
        {
            let mut s = ExactSum::of(a).unwrap();
            s.add(b).unwrap();
            assert_eq!(s.to_f64().to_bits(), (a + b).to_bits(), "{a} + {b}");
        }
    }

    #[test]
    fn adds_as_the_reference_does() {
        // Each addition as first written (a branch per kind of value, the carry walked limb by
        // limb until it runs out): what the branch-free one must give, bit for bit.
        fn reference_add(limbs: &mut [u64; LIMBS], x: f64) {
            if x == 0.0 {
                return;
            }
            let bits = x.to_bits();
            let biased = ((bits >> 52) & 0x7ff) as i32;
            let (mantissa, exponent) = match biased {
                0 => (bits & ((1 << 52) - 1), -1074),
                _ => ((bits & ((1 << 52) - 1)) | (1 << 52), biased - 1075),
            };
            let shift = exponent + FRACTION_BITS;
            let (limb, mut carry) = match shift {
                ..=-53 => return,
                -52..0 => (0, u128::from(mantissa >> -shift)),
                _ => ((shift / 64) as usize, u128::from(mantissa) << (shift % 64)),
            };
            for l in &mut limbs[limb..] {
                let sum = u128::from(*l) + (carry & u128::from(u64::MAX));
                *l = sum as u64;
                carry = (carry >> 64) + (sum >> 64);
            }
            if carry != 0 {
                *limbs = [u64::MAX; LIMBS];
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let (mut sums, mut reference) = ([ExactSum::default(); 8], [[0u64; LIMBS]; 8]);
        for i in 0..200_000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let mantissa = (s >> 11) as f64 / (1u64 << 53) as f64;
            // Sum 0 alone gets values near the top, and saturates.
            let k = (s >> 61) as usize;
            let x = match i % 4 {
                0 => mantissa * pow2(((s >> 3) % 200) as i32 - 170), // down past the unit
                1 => f64::from_bits(s >> 13),                        // subnormal
                2 if k == 0 => mantissa * pow2(94),
                _ => mantissa * pow2(((s >> 3) % 60) as i32 - 20),
            };
            sums[k].add(x).unwrap();
            reference_add(&mut reference[k], x);
            assert_eq!(sums[k].limbs(), reference[k], "adding {x:e}");
        }
        assert!(sums.iter().any(ExactSum::is_saturated) && !sums.iter().all(ExactSum::is_saturated));
    }

    #[test]
    fn single_values_come_back_exactly() {
        for x in [1.0, 0.1, 12345.678, 2.5e-20, 3e-32, 7.9e28, f64::MIN_POSITIVE * 1e300] {
            assert_eq!(ExactSum::of(x).unwrap().to_f64(), x, "{x}");
        }
        assert_eq!(ExactSum::default().to_f64(), 0.0);
    }

    #[test]
    fn what_it_cannot_hold_is_refused_and_the_tiny_is_dropped() {
        for x in [-1.0, f64::NAN, f64::INFINITY, pow2(96), 1e300] {
            assert!(ExactSum::of(x).is_err() && !ExactSum::holds(x), "{x}");
        }
        let below = f64::from_bits(pow2(96).to_bits() - 1);
        for x in [0.0, -0.0, pow2(-1074), pow2(-161), 1.0, below, -pow2(-1074)] {
            assert_eq!(ExactSum::holds(x), ExactSum::of(x).is_ok(), "{x:e}");
        }
        assert_eq!(ExactSum::of(pow2(-161)).unwrap(), ExactSum::default());
        assert_eq!(ExactSum::of(-0.0).unwrap(), ExactSum::default());
        let mut near = ExactSum::of(pow2(95)).unwrap();
        assert!(!near.is_saturated());
        near.add(pow2(95)).unwrap();
        assert!(near.is_saturated(), "2^96 saturates");
        near.merge(&ExactSum::of(1.0).unwrap());
        assert!(near.is_saturated(), "and stays saturated");
    }
}
