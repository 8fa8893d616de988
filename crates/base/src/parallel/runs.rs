//! Work over many small groups, cut into tasks: runs of consecutive owners (rows) whose items
//! (children, group members) are consecutive too, as the breadth-first layout makes them.

use std::ops::Range;

/// Cuts `owners` into runs of consecutive owners holding at least `chunk` items each (the last
/// may hold fewer; every run has an owner), owner `x` holding items `first_item(x)..first_item(x +
/// 1)` (so `first_item` never decreases). Returns each run with its number of items.
/// With owners 0..4 holding 3, 0, 5 and 1 items and chunks of 4: `[(0..3, 8), (3..4, 1)]`.
pub fn owner_runs(
    owners: Range<usize>,
    chunk: usize,
    first_item: impl Fn(usize) -> usize,
) -> Vec<(Range<usize>, usize)> {
    let mut runs = Vec::new();
    let mut x0 = owners.start;
    while x0 < owners.end {
        let target = first_item(x0) + chunk;
        // The first later owner at or past the target (items never decrease with the owner):
        // a binary search, as most owners of a tree (its users) hold nothing.
        let (mut x1, mut hi) = (x0 + 1, owners.end);
        while x1 < hi {
            let mid = x1 + (hi - x1) / 2;
            if first_item(mid) < target {
                x1 = mid + 1;
            } else {
                hi = mid;
            }
        }
        runs.push((x0..x1, first_item(x1) - first_item(x0)));
        x0 = x1;
    }
    runs
}

/// Splits `items` into the consecutive parts that `runs` hold, one per run.
pub fn split_runs<'a, T>(mut items: &'a mut [T], runs: &[(Range<usize>, usize)]) -> Vec<&'a mut [T]> {
    runs.iter()
        .map(|&(_, len)| {
            let (head, tail) = std::mem::take(&mut items).split_at_mut(len);
            items = tail;
            head
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_hold_at_least_a_chunk_and_split_the_items() {
        let first = [0, 3, 3, 8, 9];
        let runs = owner_runs(0..4, 4, |x| first[x]);
        assert_eq!(runs, [(0..3, 8), (3..4, 1)]);
        let mut items: Vec<u32> = (0..9).collect();
        let parts = split_runs(&mut items, &runs);
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 1]);
        assert_eq!(owner_runs(2..2, 4, |x| first[x]), []);
        // A run never has fewer than one owner, even when one owner holds more than a chunk.
        assert_eq!(owner_runs(0..2, 1, |x| first[x]), [(0..1, 3), (1..2, 0)]);
    }

    #[test]
    fn runs_match_a_linear_scan() {
        // Owners holding 0..5 items, with long stretches of empty ones (a tree's users).
        let mut first = vec![0usize];
        let mut seed = 17u64;
        for i in 0..3000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let held = if i % 700 < 300 { 0 } else { (seed >> 60) as usize % 5 };
            first.push(first.last().unwrap() + held);
        }
        for chunk in [1, 2, 7, 64, 10_000] {
            let mut linear = Vec::new();
            let mut x0 = 0;
            while x0 < 3000 {
                let mut x1 = x0 + 1;
                while x1 < 3000 && first[x1] < first[x0] + chunk {
                    x1 += 1;
                }
                linear.push((x0..x1, first[x1] - first[x0]));
                x0 = x1;
            }
            assert_eq!(owner_runs(0..3000, chunk, |x| first[x]), linear, "chunk {chunk}");
        }
    }
}
