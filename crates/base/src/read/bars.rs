//! Where the fields of a `sacct -P` line end: every `|` found 64 bytes at a time.
//!
//! Hand-written because the line's split was a sixth of charging a `sacct` file: its 25 or so
//! bars were found 8 bytes at a time, and the loop over each word's bars took a branch that the
//! CPU could not predict about once per word. Here one 64-bit mask per 64 bytes (SSE2, which
//! every x86_64 CPU has; elsewhere the same mask from 8-byte words) leaves one such branch per
//! 64 bytes. In `perf` of charging 10^7 `sacct` lines (docs/performance-log.md), the split went
//! from 16.6% of the samples to about 7%.

/// The end of each `|`-separated field of `line`, written to `ends` (cleared first): the byte
/// offset of each bar, then `line.len()`. With a `limit`, at most that many fields: the last one
/// runs to the end of the line, bars and all. `ann|phys||x` ends at 3, 8, 9 and 11.
#[inline]
pub fn field_ends(line: &[u8], limit: Option<usize>, ends: &mut Vec<usize>) {
    ends.clear();
    let mut chunks = line.chunks_exact(64);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        push_bits(bar_mask(chunk.try_into().expect("64 bytes")), at, ends);
        at += 64;
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 64];
    tail[..rest.len()].copy_from_slice(rest);
    push_bits(bar_mask(&tail), at, ends);
    // Cutting here instead of stopping the scan costs the rest of one line: only a free-text last
    // column is limited.
    if let Some(limit) = limit {
        ends.truncate(limit.saturating_sub(1));
    }
    ends.push(line.len());
}

/// Appends `at` plus the position of each set bit of `mask`, lowest first.
fn push_bits(mut mask: u64, at: usize, out: &mut Vec<usize>) {
    while mask != 0 {
        out.push(at + mask.trailing_zeros() as usize);
        mask &= mask - 1;
    }
}

/// Bit `i` set where `chunk[i]` is `|`.
fn bar_mask(chunk: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has it.
    unsafe {
        bar_mask_sse2(chunk)
    }
    #[cfg(not(target_arch = "x86_64"))]
    bar_mask_words(chunk)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn bar_mask_sse2(chunk: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    let bar = _mm_set1_epi8(b'|' as i8);
    let mut mask = 0;
    for (k, sixteen) in chunk.chunks_exact(16).enumerate() {
        // SAFETY: `sixteen` holds 16 bytes; the load takes any alignment.
        let v = unsafe { _mm_loadu_si128(sixteen.as_ptr().cast::<__m128i>()) };
        // The movemask's 16 bits, one per byte (the `as` keeps them: it only drops the zero sign).
        mask |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, bar)) as u16) << (16 * k);
    }
    mask
}

/// [`bar_mask`] without SIMD: each 8-byte word's bars as high bits, gathered into 8 bits by a
/// multiplication (the products' bits never overlap, so nothing carries).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn bar_mask_words(chunk: &[u8; 64]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    chunk.chunks_exact(8).enumerate().fold(0, |mask, (k, word)| {
        let x = u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ 0x7c7c_7c7c_7c7c_7c7c;
        // The high bit of each byte that was `|` (zero now) and no other: the sums stay within
        // their bytes, where the shorter `(x - 0x01..) & !x` can flag a byte after a match.
        let bars = !(((x & LOW7) + LOW7) | x | LOW7);
        mask | ((bars >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(state: &mut u64) -> usize {
        *state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (*state >> 33) as usize
    }

    #[test]
    fn ends_are_where_str_split_cuts() {
        // Bars, their neighbours in the byte table (`{`, `}`), and `ü`, which ends in 0xbc: a bar
        // with the high bit set; lines up to 200 bytes, across chunk boundaries.
        let alphabet = ["|", "}", "{", "a", "é", "|}", "ü", "||||||||"];
        let mut state = 7;
        let mut ends = Vec::new();
        for _ in 0..3000 {
            let line: String = (0..lcg(&mut state) % 70).map(|_| alphabet[lcg(&mut state) % alphabet.len()]).collect();
            let fields = |ends: &[usize]| -> Vec<String> {
                let starts = std::iter::once(0).chain(ends.iter().map(|e| e + 1));
                starts.zip(ends).map(|(s, &e)| line[s..e].to_string()).collect()
            };
            field_ends(line.as_bytes(), None, &mut ends);
            assert_eq!(fields(&ends), line.split('|').collect::<Vec<_>>(), "{line:?}");
            let limit = 1 + lcg(&mut state) % 6;
            field_ends(line.as_bytes(), Some(limit), &mut ends);
            assert_eq!(fields(&ends), line.splitn(limit, '|').collect::<Vec<_>>(), "{line:?} in {limit}");
        }
    }

    #[test]
    fn the_word_masks_agree_with_the_simd_ones() {
        let mut state = 11;
        for _ in 0..20_000 {
            let mut chunk = [0u8; 64];
            // Mostly bars and bytes one bit away from a bar, some of any value.
            for b in &mut chunk {
                *b = match lcg(&mut state) % 4 {
                    0 => b'|',
                    1 => b'|' ^ (1 << (lcg(&mut state) % 8)),
                    _ => lcg(&mut state) as u8,
                };
            }
            let expected = chunk.iter().enumerate().fold(0u64, |m, (i, &b)| m | (u64::from(b == b'|') << i));
            assert_eq!(bar_mask_words(&chunk), expected, "{chunk:?}");
            assert_eq!(bar_mask(&chunk), expected, "{chunk:?}");
        }
    }
}
