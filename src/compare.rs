//! Comparing fair-share results: ranks, rank correlation, the associations that move most.

/// Competition ranks of `values`, best (highest) first: equal values share the better rank and
/// the next distinct value skips the tied places (1, 2, 2, 4). NaN ranks last.
///
/// # Example
/// ```
/// assert_eq!(fairshare::compare::competition_ranks(&[0.5, 0.9, 0.5, 0.1]), vec![2, 1, 2, 4]);
/// ```
pub fn competition_ranks(values: &[f64]) -> Vec<u32> {
    let key = |v: f64| if v.is_nan() { f64::NEG_INFINITY } else { v };
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| key(values[b]).total_cmp(&key(values[a])));
    let mut ranks = vec![0u32; values.len()];
    for (place, &i) in order.iter().enumerate() {
        ranks[i] = if place > 0 && key(values[order[place - 1]]) == key(values[i]) {
            ranks[order[place - 1]]
        } else {
            place as u32 + 1
        };
    }
    ranks
}

/// Fractional (average) ranks, ascending, for Spearman's coefficient.
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = mean;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation of two equally long series (Pearson's correlation of their average
/// ranks, so ties are handled); NaN when either series is constant or shorter than 2.
///
/// # Example
/// ```
/// use fairshare::compare::spearman;
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
/// ```
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "series of equal length");
    let n = a.len() as f64;
    if a.len() < 2 {
        return f64::NAN;
    }
    let (ra, rb) = (average_ranks(a), average_ranks(b));
    let mean = (n + 1.0) / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        cov += (x - mean) * (y - mean);
        va += (x - mean) * (x - mean);
        vb += (y - mean) * (y - mean);
    }
    cov / (va * vb).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_correlation_with_ties() {
        assert_eq!(competition_ranks(&[f64::NAN, 1.0, 1.0, 2.0]), vec![4, 2, 2, 1]);
        assert_eq!(average_ranks(&[5.0, 1.0, 5.0, 3.0]), vec![3.5, 1.0, 3.5, 2.0]);
        // Textbook example: d² = 0+1+1+0+0 over n=5 with no ties gives 1 - 6·2/(5·24) = 0.9.
        let r = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 3.0, 2.0, 4.0, 5.0]);
        assert!((r - 0.9).abs() < 1e-12, "{r}");
        assert!(spearman(&[1.0, 1.0], &[1.0, 2.0]).is_nan());
    }
}
