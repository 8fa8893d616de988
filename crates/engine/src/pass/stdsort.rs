//! libstdc++'s `std::sort` (introsort), step for step.
//!
//! flux-accounting sorts siblings with `std::sort` and a comparator that is not a strict weak
//! ordering (a tolerance test for equality, users first among near-equal weights). With such a
//! comparator the result depends on the sorting algorithm itself, so agreeing with flux-accounting
//! means running the same algorithm: median-of-three quicksort down to runs of 16, a heapsort
//! fallback past `2·log2(n)` levels, and a final insertion sort. Where libstdc++'s unguarded loops
//! rely on the comparator to stop them, these loops also stop at the slice bounds, so an
//! inconsistent comparator can never read out of bounds.

/// libstdc++'s `_S_threshold`.
const THRESHOLD: usize = 16;

/// Sorts `v` as `std::sort(v.begin(), v.end(), less)` does with libstdc++.
///
/// # Example
/// ```
/// let mut v = vec![3, 1, 2];
/// fairshare_engine::pass::stdsort::sort(&mut v, |a, b| a < b);
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn sort<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    if v.len() > 1 {
        let depth = 2 * v.len().ilog2() as usize;
        introsort_loop(v, depth, &less);
        final_insertion_sort(v, &less);
    }
}

fn introsort_loop<T: Copy>(mut v: &mut [T], mut depth: usize, less: &impl Fn(&T, &T) -> bool) {
    while v.len() > THRESHOLD {
        if depth == 0 {
            heap_sort(v, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, less);
        let (left, right) = v.split_at_mut(cut);
        introsort_loop(right, depth, less);
        v = left;
    }
}

/// `__unguarded_partition_pivot`: median of (second, middle, last) moved to the front, then a
/// Hoare partition of the rest around it. Returns the cut.
fn partition_pivot<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) -> usize {
    let n = v.len();
    move_median_to_first(v, 1, n / 2, n - 1, less);
    let pivot = v[0];
    let (mut first, mut last) = (1, n);
    loop {
        while first < n && less(&v[first], &pivot) {
            first += 1;
        }
        last -= 1;
        while last > 0 && less(&pivot, &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn move_median_to_first<T: Copy>(v: &mut [T], a: usize, b: usize, c: usize, less: &impl Fn(&T, &T) -> bool) {
    let pick = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(0, pick);
}

fn final_insertion_sort<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    if v.len() > THRESHOLD {
        insertion_sort(&mut v[..THRESHOLD], less);
        for i in THRESHOLD..v.len() {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, less);
    }
}

fn insertion_sort<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    for i in 1..v.len() {
        if less(&v[i], &v[0]) {
            let val = v[i];
            v.copy_within(0..i, 1);
            v[0] = val;
        } else {
            linear_insert(v, i, less);
        }
    }
}

/// `__unguarded_linear_insert`: shifts `v[i]` left past every element it is less than.
fn linear_insert<T: Copy>(v: &mut [T], mut i: usize, less: &impl Fn(&T, &T) -> bool) {
    let val = v[i];
    while i > 0 && less(&val, &v[i - 1]) {
        v[i] = v[i - 1];
        i -= 1;
    }
    v[i] = val;
}

/// `__partial_sort(first, last, last)`: `make_heap` then `sort_heap`.
fn heap_sort<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut parent = (n - 2) / 2;
    loop {
        let val = v[parent];
        adjust_heap(v, parent, n, val, less);
        if parent == 0 {
            break;
        }
        parent -= 1;
    }
    let mut last = n;
    while last > 1 {
        last -= 1;
        let val = v[last];
        v[last] = v[0];
        adjust_heap(v, 0, last, val, less);
    }
}

/// `__adjust_heap` followed by `__push_heap`, as libstdc++ sifts.
fn adjust_heap<T: Copy>(v: &mut [T], mut hole: usize, len: usize, val: T, less: &impl Fn(&T, &T) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&v[child], &v[child - 1]) {
            child -= 1;
        }
        v[hole] = v[child];
        hole = child;
    }
    if len.is_multiple_of(2) && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[hole] = v[child - 1];
        hole = child - 1;
    }
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && less(&v[parent], &val) {
        v[hole] = v[parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    v[hole] = val;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn sorts_like_a_sort_for_consistent_comparators() {
        let mut seed = 7;
        for n in [0usize, 1, 2, 15, 16, 17, 33, 100, 1000] {
            let mut v: Vec<u64> = (0..n).map(|_| lcg(&mut seed) % 50).collect();
            let mut w = v.clone();
            sort(&mut v, |a, b| a < b);
            w.sort();
            assert_eq!(v, w, "n = {n}");
        }
    }

    #[test]
    fn heap_fallback_sorts() {
        let mut seed = 11;
        for n in [2usize, 3, 4, 5, 17, 64, 257] {
            let mut v: Vec<u64> = (0..n).map(|_| lcg(&mut seed) % 20).collect();
            let mut w = v.clone();
            heap_sort(&mut v, &|a: &u64, b: &u64| a < b);
            w.sort();
            assert_eq!(v, w, "n = {n}");
        }
    }

    #[test]
    fn inconsistent_comparators_stay_in_bounds() {
        let mut seed = 3;
        for n in [5usize, 17, 100, 500] {
            let mut v: Vec<u64> = (0..n).map(|_| lcg(&mut seed)).collect();
            let mut original = v.clone();
            sort(&mut v, |a, b| (a ^ b) & 1 == 1);
            v.sort_unstable();
            original.sort_unstable();
            assert_eq!(v, original, "a permutation of the input");
        }
    }
}
