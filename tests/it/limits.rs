//! Numeric limits: absurd times, overflowing weights and usages are errors naming the input, never a huge allocation or an inverted ranking.
