//! Dictionary-encoded Parquet column chunks written from keys the caller already has.
//!
//! arrow-rs builds a column's dictionary itself: its writer hashes every value into an interner,
//! even for an Arrow dictionary whose keys already say which rows repeat, it takes no keys, and
//! names past its 1 MiB dictionary page go plain. In a 10^7-job `score` the names (plain: 7-10 MB
//! per row group for ZSTD) and eight few-valued factors (hashed, 0.09–0.15 s each) were two thirds
//! of the writer's CPU; written here from keys, the command took a fifth less CPU
//! (docs/performance-log.md). A chunk is written as the format defines it (Parquet's
//! `Encodings.md`, data pages v1): a PLAIN dictionary page, then data pages of definition levels
//! (nullable columns) and `RLE_DICTIONARY` keys, each bit-packed and compressed with ZSTD, with
//! the chunk's metadata, column index and offset index, for
//! `SerializedRowGroupWriter::append_column`. [`intern`] keys few-valued numbers for it with a
//! table sized to them.

use arrow::buffer::NullBuffer;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ColumnIndexBuilder, PageEncodingStats};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// A column chunk's dictionary: its values PLAIN-encoded in key order, and their statistics.
pub(super) struct Dictionary {
    /// The values as the dictionary page holds them (PLAIN: fixed-width little-endian numbers, or
    /// each string's 4-byte length then its bytes).
    pub plain: Vec<u8>,
    /// How many values.
    pub len: usize,
    /// The chunk's statistics (`None`: the column carries none).
    pub statistics: Option<Statistics>,
    /// The values' order, for the pages' bounds (the column index); `None`: no column index.
    pub order: Option<ValueOrder>,
}

/// The order of a dictionary's fixed-width values, as Parquet compares them.
pub(super) struct ValueOrder {
    /// Per key, its rank among the values ([`NO_RANK`]: NaN, in no bounds).
    pub rank: Vec<u32>,
    /// Per rank, its key.
    pub key: Vec<u32>,
    /// The values' physical type and width in bytes.
    pub physical: PhysicalType,
    pub width: usize,
}

/// The rank of a value no bounds take (NaN).
pub(super) const NO_RANK: u32 = u32::MAX;

/// Rows per data page, as arrow-rs's default limit (pages start on rows a reader can skip to).
const PAGE_ROWS: usize = parquet::file::properties::DEFAULT_DATA_PAGE_ROW_COUNT_LIMIT;

/// The column chunk of `keys` (one per row, indexing `dictionary`; a null row's key is ignored)
/// and `valid` (the rows' validity; `None`: every row valid), as its bytes and what the row
/// group writer needs to append them.
///
/// # Errors
/// The compressor fails, or a page is larger than Parquet's 2 GiB.
pub(super) fn write_chunk(
    descr: ColumnDescPtr,
    level: ZstdLevel,
    keys: &[u32],
    valid: Option<&NullBuffer>,
    dictionary: Dictionary,
) -> Result<(Bytes, ColumnCloseResult)> {
    let mut compressor = zstd::bulk::Compressor::new(level.compression_level()).map_err(zstd_error)?;
    let mut compress = |page: &[u8]| compressor.compress(page).map(Bytes::from).map_err(zstd_error);
    let size = |n: usize| i32::try_from(n).map_err(|_| ParquetError::General(format!("a page of {n} bytes")));
    let mut sink = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut sink);
    let (mut compressed, mut uncompressed) = (0, 0);
    size(dictionary.plain.len())?;
    let dict = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf: compress(&dictionary.plain)?,
            num_values: dictionary.len as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        dictionary.plain.len(),
    ))?;
    compressed += dict.compressed_size;
    uncompressed += dict.uncompressed_size;
    // Keys as few bits as the largest needs (at least one: readers handle width 0 unevenly).
    let width = (u32::BITS - (dictionary.len.max(2) as u32 - 1).leading_zeros()) as u8;
    let levels = descr.max_def_level() > 0;
    let mut locations = Vec::new();
    let mut index = dictionary.order.as_ref().map(|o| (o, ColumnIndexBuilder::new(o.physical)));
    let mut page = Vec::new();
    for first in (0..keys.len()).step_by(PAGE_ROWS) {
        let rows = first..(first + PAGE_ROWS).min(keys.len());
        page.clear();
        if levels {
            // Definition levels, v1: their byte length, then the run.
            page.extend_from_slice(&[0; 4]);
            let is_valid = |r: usize| valid.is_none_or(|v| v.is_valid(r));
            bit_packed(rows.clone().map(|r| u32::from(is_valid(r))), 1, &mut page);
            let len = size(page.len() - 4)?;
            page[..4].copy_from_slice(&len.to_le_bytes());
        }
        page.push(width);
        match valid {
            Some(v) => bit_packed(rows.clone().filter(|&r| v.is_valid(r)).map(|r| keys[r]), width, &mut page),
            None => bit_packed(keys[rows.clone()].iter().copied(), width, &mut page),
        }
        size(page.len())?;
        if let Some((order, builder)) = index.as_mut() {
            page_bounds(
                order,
                &dictionary.plain,
                &keys[rows.clone()],
                valid.map(|v| v.slice(first, rows.len())),
                builder,
            );
        }
        let spec = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf: compress(&page)?,
                num_values: rows.len() as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            page.len(),
        ))?;
        compressed += spec.compressed_size;
        uncompressed += spec.uncompressed_size;
        locations.push(PageLocation {
            offset: spec.offset as i64,
            compressed_page_size: size(spec.compressed_size)?,
            first_row_index: first as i64,
        });
    }
    pages.close()?;
    let data_pages = locations.len() as i32;
    let mut metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(Compression::ZSTD(level))
        .set_encodings_mask(EncodingMask::new_from_encodings(
            [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY].iter(),
        ))
        .set_page_encoding_stats(vec![
            PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 },
            PageEncodingStats { page_type: PageType::DATA_PAGE, encoding: Encoding::RLE_DICTIONARY, count: data_pages },
        ])
        .set_total_compressed_size(compressed as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_num_values(keys.len() as i64)
        .set_dictionary_page_offset(Some(dict.offset as i64))
        .set_data_page_offset(locations.first().map_or(compressed as i64, |l| l.offset));
    if let Some(statistics) = dictionary.statistics {
        metadata = metadata.set_statistics(statistics);
    }
    let bytes = Bytes::from(sink.into_inner()?);
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: keys.len() as u64,
        metadata: metadata.build()?,
        bloom_filter: None,
        column_index: match index {
            Some((_, builder)) if builder.valid() => Some(builder.build()?),
            _ => None,
        },
        offset_index: Some(OffsetIndexMetaData { page_locations: locations, unencoded_byte_array_data_bytes: None }),
    };
    Ok((bytes, close))
}

/// Appends to `index` the bounds of a page of `keys` (`valid`: their validity), as the PLAIN
/// bytes of its least and greatest value: none for a page of nulls, and no index at all once a
/// page holds only NaN (as arrow-rs: its values then have no bounds).
fn page_bounds(
    order: &ValueOrder,
    plain: &[u8],
    keys: &[u32],
    valid: Option<NullBuffer>,
    index: &mut ColumnIndexBuilder,
) {
    let (mut low, mut high, mut values, mut nans) = (NO_RANK, 0, 0, 0);
    for (r, &k) in keys.iter().enumerate() {
        if valid.as_ref().is_none_or(|v| v.is_valid(r)) {
            values += 1;
            let rank = order.rank[k as usize];
            if rank == NO_RANK {
                nans += 1;
            } else {
                low = low.min(rank);
                high = high.max(rank);
            }
        }
    }
    // Floating-point pages count their NaN, as arrow-rs's.
    let nans = (order.physical == PhysicalType::DOUBLE).then_some(nans);
    let nulls = (keys.len() - values) as i64;
    let bytes = |rank: u32| {
        let at = order.key[rank as usize] as usize * order.width;
        plain[at..at + order.width].to_vec()
    };
    match (values, low) {
        (0, _) => index.append(true, Vec::new(), Vec::new(), nulls, nans),
        (_, NO_RANK) => index.to_invalid(),
        _ => index.append(false, bytes(low), bytes(high), nulls, nans),
    }
}

fn zstd_error(e: std::io::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

/// `values`, each below 2^`width`, appended to `out` as one bit-packed run of Parquet's
/// RLE/bit-packing hybrid: its header (the count of 8-value groups, shifted, with the low bit
/// set), then the values' low bits first, the last group padded with zeros.
fn bit_packed(values: impl Iterator<Item = u32>, width: u8, out: &mut Vec<u8>) {
    let header = out.len();
    // Room for the header's ULEB128 (groups fit in 31 bits: 5 bytes), written at the end.
    out.extend_from_slice(&[0; 5]);
    let start = out.len();
    let (mut bits, mut filled, mut count) = (0u64, 0u32, 0usize);
    for v in values {
        bits |= u64::from(v) << filled;
        filled += u32::from(width);
        while filled >= 8 {
            out.push(bits as u8);
            bits >>= 8;
            filled -= 8;
        }
        count += 1;
    }
    if filled > 0 {
        out.push(bits as u8);
    }
    let groups = count.div_ceil(8);
    out.resize(start + groups * usize::from(width), 0);
    let mut uleb = [0u8; 5];
    let mut n = (groups << 1 | 1) as u64;
    let mut len = 0;
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        uleb[len] = if n == 0 { low } else { low | 0x80 };
        len += 1;
        if n == 0 {
            break;
        }
    }
    out.splice(header..start, uleb[..len].iter().copied());
}

/// Keys for `n` values given by their bits (`bits(i)`; equal values, equal bits; `None`: a null
/// row, keyed 0), numbered in order of first appearance, and the distinct bits in key order;
/// `None` past `most` distinct.
///
/// An open-addressing table that grows with the values found (a few-valued column never makes
/// a large one), after a check against the previous row's value (runs are common).
///
/// # Example
/// The keys of 7, 3, 7, 7 are 0, 1, 0, 0, and the dictionary 7, 3.
pub(super) fn intern(n: usize, bits: impl Fn(usize) -> Option<u64>, most: usize) -> Option<(Vec<u32>, Vec<u64>)> {
    let mut keys = Vec::with_capacity(n);
    let mut values: Vec<u64> = Vec::new();
    // Per slot, a value's bits and its key + 1 (0: empty), at most half full: a probe's two
    // loads are independent, where a slot holding only the key sent it on to the values (two
    // misses in a row once a column's distinct values outgrow the L2 cache).
    let mut slots: Vec<(u64, u32)> = vec![(0, 0); 64];
    let slot_of = |b: u64, len: usize| {
        let h = (b ^ (b >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - len.trailing_zeros())) as usize
    };
    let mut last: Option<(u64, u32)> = None;
    for i in 0..n {
        let Some(b) = bits(i) else {
            keys.push(0);
            continue;
        };
        if let Some((lb, lk)) = last
            && lb == b
        {
            keys.push(lk);
            continue;
        }
        let mut s = slot_of(b, slots.len());
        let key = loop {
            match slots[s] {
                (v, k) if k != 0 && v == b => break k - 1,
                (_, 0) => {
                    if values.len() == most {
                        return None;
                    }
                    values.push(b);
                    slots[s] = (b, values.len() as u32);
                    if 2 * values.len() > slots.len() {
                        slots = vec![(0, 0); 2 * slots.len()];
                        for (k, &v) in values.iter().enumerate() {
                            let mut t = slot_of(v, slots.len());
                            while slots[t].1 != 0 {
                                t = (t + 1) & (slots.len() - 1);
                            }
                            slots[t] = (v, k as u32 + 1);
                        }
                    }
                    break values.len() as u32 - 1;
                }
                _ => s = (s + 1) & (slots.len() - 1),
            }
        };
        last = Some((b, key));
        keys.push(key);
    }
    Some((keys, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values first seen first; runs and returns get the same key; past `most` distinct, none.
    #[test]
    fn interned_keys_follow_first_appearance() {
        let v = [7u64, 3, 7, 7, 9, 3];
        let (keys, dict) = intern(v.len(), |i| Some(v[i]), 3).expect("three distinct");
        assert_eq!((keys, dict), (vec![0, 1, 0, 0, 2, 1], vec![7, 3, 9]));
        assert!(intern(v.len(), |i| Some(v[i]), 2).is_none());
        // Null rows take key 0 and no place in the dictionary.
        let (keys, dict) = intern(4, |i| (i % 2 == 1).then_some(5 + i as u64), 3).expect("two distinct");
        assert_eq!((keys, dict), (vec![0, 0, 0, 1], vec![6, 8]));
        // Past the table's first size, with values that share their low bits.
        let many: Vec<u64> = (0..10_000u64).map(|i| (i % 700) << 40).collect();
        let (keys, dict) = intern(many.len(), |i| Some(many[i]), 1000).expect("700 distinct");
        assert_eq!(dict.len(), 700);
        assert!(keys.iter().enumerate().all(|(i, &k)| dict[k as usize] == many[i]));
    }

    /// A run is its header (groups of 8, shifted, low bit set) and the values' bits, low first,
    /// padded to whole groups.
    #[test]
    fn bit_packed_runs_follow_the_format() {
        let mut out = vec![0xaa];
        bit_packed([1u32, 2, 3, 4, 5, 6, 7, 0, 1].into_iter(), 3, &mut out);
        // 9 values: 2 groups → header 0b101; 6 bytes of 3-bit values.
        // Group 1: 1,2,3,4,5,6,7,0 → bits 001 010 011 100 101 110 111 000 (low first).
        assert_eq!(out, vec![0xaa, 0x05, 0b1101_0001, 0b0101_1000, 0b0001_1111, 0x01, 0x00, 0x00]);
        let mut long = Vec::new();
        bit_packed(std::iter::repeat_n(1, 8 * 200), 1, &mut long);
        // 200 groups: (200 << 1 | 1) = 401 = 0b11_0010001 → ULEB 0x91 0x03.
        assert_eq!(&long[..2], &[0x91, 0x03]);
        assert_eq!(long.len(), 2 + 200);
        assert!(long[2..].iter().all(|&b| b == 0xff));
    }
}
