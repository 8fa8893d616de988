//! Sorting a group by a 64-bit key fast: one `u64` per member instead of a record.
//!
//! Fair Tree orders each group by level_fs, then users before accounts, then lineage position (a
//! stable sort). Packing the value's leading bits, the kind bit and the member's index into one
//! `u64` makes every entry unique, so an unstable sort of plain integers (half the size of a
//! key-row-index record) gives the stable order. Values whose leading bits agree but whose full
//! values differ (less than `2^b` ulps apart in a group of up to `2^b`) are rare; when a group
//! has any, it is sorted again on the full keys. (flux's sort is unstable by nature; there the
//! extra copy into the packed order measured slower than sorting its records directly.)

/// Sorts the members of a group by `keys` ascending, then by index, into `order`.
///
/// A key is a value's order-preserving bits above a kind bit (bit 0). Each entry of `order` holds
/// a member's index in its low bits; the returned mask selects them.
pub(crate) fn key_order(keys: &[u64], order: &mut Vec<u64>) -> u64 {
    let m = keys.len();
    // The index in the low `b` bits, the kind bit above it, the value's leading bits above that.
    let b = usize::BITS - (m.max(2) - 1).leading_zeros();
    let idx_mask = (1u64 << b) - 1;
    order.clear();
    order.extend(keys.iter().enumerate().map(|(i, &k)| ((k >> (b + 1)) << (b + 1)) | ((k & 1) << b) | i as u64));
    order.sort_unstable();
    let key_at = |p: u64| keys[(p & idx_mask) as usize];
    if order.windows(2).any(|w| w[0] >> (b + 1) == w[1] >> (b + 1) && key_at(w[0]) >> 1 != key_at(w[1]) >> 1) {
        order.sort_unstable_by_key(|&p| (key_at(p), p & idx_mask));
    }
    idx_mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices(keys: &[u64]) -> Vec<u64> {
        let mut order = Vec::new();
        let mask = key_order(keys, &mut order);
        order.iter().map(|&p| p & mask).collect()
    }

    fn reference(keys: &[u64]) -> Vec<u64> {
        let mut idx: Vec<u64> = (0..keys.len() as u64).collect();
        idx.sort_by_key(|&i| keys[i as usize]);
        idx
    }

    #[test]
    fn equal_values_order_by_kind_then_index() {
        assert_eq!(indices(&[5 << 1, 3 << 1 | 1, 3 << 1, 3 << 1 | 1, 3 << 1]), [2, 4, 1, 3, 0]);
        assert_eq!(indices(&[]), Vec::<u64>::new());
        assert_eq!(indices(&[7]), [0]);
    }

    #[test]
    fn values_apart_only_in_their_last_bits_order_by_value() {
        // 20 members: the index takes 5 bits, so values 1..31 apart in one 32-aligned block share
        // their packed leading bits; the larger value has the smaller kind bit and index.
        let base = 1u64 << 40;
        let mut keys: Vec<u64> = (0..20).map(|i| (base + 1000 * (i + 1)) << 1).collect();
        keys[3] = (base + 20) << 1 | 1;
        keys[5] = (base + 2) << 1;
        assert_eq!(indices(&keys), reference(&keys));
        assert_eq!(&indices(&keys)[..2], [5, 3]);
    }

    #[test]
    fn agrees_with_a_stable_sort_on_random_groups() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for m in [2usize, 3, 17, 33, 100, 1000, 5000] {
            for spread in [4u64, 1 << 12, u64::MAX >> 1] {
                let keys: Vec<u64> = (0..m).map(|_| ((next() % spread) << 1) | (next() & 1)).collect();
                assert_eq!(indices(&keys), reference(&keys), "m = {m}, spread = {spread}");
            }
        }
    }
}
