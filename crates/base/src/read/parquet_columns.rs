//! Strict conversions of Parquet columns (as Arrow arrays) to the types the readers want.
//!
//! Arrow's `cast` turns a value it cannot convert into a null (`"abc"` or `-1` as an unsigned
//! integer, bytes that are not UTF-8) and truncates fractions (`1.5` becomes 1), so a reader that
//! casts reports a bad value as a missing one, or silently reads another number. These accept what
//! the CSV readers accept, whatever type a tool gave the column (pandas, polars and DuckDB type a
//! CSV column as integers, floats or text by its values), and otherwise name the value and what
//! was expected (`Bad`). A column already of the wanted type is taken as it is, and any other
//! numeric column is converted a column at a time: only text is read value by value.

use std::fmt::Display;
use std::path::Path;

use arrow::array::{
    Array, ArrayRef, ArrowNumericType, ArrowPrimitiveType, AsArray, Float64Array, Int32Array, Int64Array,
    PrimitiveArray, StringArray, StringViewArray,
};
use arrow::compute::{CastOptions, cast, cast_with_options};
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow::error::ArrowError;

use crate::error::Error;

/// A cast that fails on a value it cannot convert instead of making it a null.
pub const STRICT: CastOptions<'static> =
    CastOptions { safe: false, format_options: arrow::util::display::FormatOptions::new() };

/// A column that does not convert: the index of its first bad value in the array (none when the
/// column's type is wrong), and what is wrong.
#[derive(Debug)]
pub struct Bad {
    index: Option<usize>,
    message: String,
}

impl Bad {
    /// Value `index` of a column is wrong: `message` says how.
    pub fn at(index: usize, message: String) -> Bad {
        Bad { index: Some(index), message }
    }

    /// Value `index` of column `name`, shown as `shown`, is not what the column holds.
    fn value(index: usize, name: &str, shown: impl Display, expected: &str) -> Bad {
        Bad { index: Some(index), message: format!("{name} {shown}: expected {expected}") }
    }

    /// Column `name` is of type `t`, which cannot hold `expected`.
    pub fn column_type(name: &str, t: &DataType, expected: &str) -> Bad {
        Bad { index: None, message: format!("{name} is {}: expected {expected}", type_name(t)) }
    }

    /// Arrow could not convert column `name`.
    pub fn arrow(name: &str, e: ArrowError) -> Bad {
        Bad { index: None, message: format!("column {name:?}: {e}") }
    }

    /// As an input error of `path`, for an array whose first value is on row `rows_before + 1`.
    pub fn error(self, path: &Path, rows_before: u64) -> Error {
        match self.index {
            Some(i) => {
                let row = rows_before + i as u64 + 1;
                Error::input(path, row, format!("row {row}: {}", self.message))
            }
            None => Error::input(path, None, self.message),
        }
    }
}

/// `t` as analysts' tools name it (`list<string>`, `int64`, `boolean`), for messages.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            "binary".into()
        }
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => format!("list<{}>", type_name(f.data_type())),
        DataType::Struct(fields) => {
            let fields: Vec<String> =
                fields.iter().map(|f| format!("{}: {}", f.name(), type_name(f.data_type()))).collect();
            format!("struct<{}>", fields.join(", "))
        }
        // A map's entries are a struct of its key and value.
        DataType::Map(entries, _) => type_name(entries.data_type()).replacen("struct", "map", 1),
        DataType::Dictionary(_, values) => type_name(values),
        t => t.to_string().to_lowercase(),
    }
}

/// Whether a column of type `t` holds text: strings, bytes (UTF-8 when valid), or a dictionary
/// of either.
pub fn holds_text(t: &DataType) -> bool {
    match t {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => true,
        DataType::Dictionary(_, values) => holds_text(values),
        _ => false,
    }
}

/// A text column as read: plain, or a dictionary's keys and values (kept, so that a reader can
/// handle each distinct value once).
pub enum Text {
    /// One string per row.
    Plain(StringArray),
    /// Per row a key into the values.
    Dict(Int32Array, StringArray),
    /// One view per row: short strings inside it, longer ones pointing into the pages read (no
    /// copy of the bytes).
    View(StringViewArray),
}

impl Text {
    /// Value `i`, `None` when null.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            Text::Plain(a) => a.is_valid(i).then(|| a.value(i)),
            Text::View(a) => a.is_valid(i).then(|| a.value(i)),
            Text::Dict(keys, values) => keys
                .is_valid(i)
                .then(|| keys.value(i) as usize)
                .filter(|&k| values.is_valid(k))
                .map(|k| values.value(k)),
        }
    }
}

/// Column `name` as text, dictionaries kept: strings, bytes that are UTF-8, and integers (written in
/// decimal: a CSV column of numeric names comes back from DuckDB or polars as integers).
///
/// # Errors
/// Bytes that are not UTF-8 (with their row), or a column of another type.
pub fn text(a: &ArrayRef, name: &str) -> Result<Text, Bad> {
    let values = match a.data_type() {
        DataType::Dictionary(_, values) => values,
        DataType::Utf8View => return Ok(Text::View(a.as_string_view().clone())),
        _ => return plain_text(a, name).map(Text::Plain),
    };
    // Keys of any integer width (pyarrow writes a pandas category's as int8).
    let dict =
        cast(a, &DataType::Dictionary(Box::new(DataType::Int32), values.clone())).map_err(|e| Bad::arrow(name, e))?;
    let dict = dict.as_dictionary::<Int32Type>();
    let keys = dict.keys();
    let values = plain_text(dict.values(), name).map_err(|bad| Bad {
        // A bad dictionary value is reported on the first row that holds it.
        index: bad.index.and_then(|v| keys.iter().position(|k| k == Some(v as i32))),
        ..bad
    })?;
    Ok(Text::Dict(keys.clone(), values))
}

/// Column `name` as plain strings, dictionaries expanded.
///
/// # Errors
/// As [`text`].
pub fn strings(a: &ArrayRef, name: &str) -> Result<StringArray, Bad> {
    match text(a, name)? {
        Text::Plain(s) => Ok(s),
        Text::View(_) => plain_text(a, name),
        Text::Dict(keys, values) => {
            Ok(arrow::compute::take(&values, &keys, None).map_err(|e| Bad::arrow(name, e))?.as_string().clone())
        }
    }
}

/// A column that is not a dictionary as strings.
fn plain_text(a: &ArrayRef, name: &str) -> Result<StringArray, Bad> {
    let t = a.data_type();
    let as_strings = |a: &ArrayRef| -> Result<StringArray, ArrowError> {
        Ok(cast_with_options(a, &DataType::Utf8, &STRICT)?.as_string().clone())
    };
    match t {
        DataType::Utf8 => Ok(a.as_string().clone()),
        DataType::LargeUtf8 | DataType::Utf8View => as_strings(a).map_err(|e| Bad::arrow(name, e)),
        t if t.is_integer() => as_strings(a).map_err(|e| Bad::arrow(name, e)),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => as_strings(a).map_err(|_| {
            // The cast checks every value at once; only a failed one looks for the culprit.
            let bytes = cast(a, &DataType::LargeBinary).map(|b| b.as_binary::<i64>().clone());
            match bytes {
                Ok(b) => match (0..b.len()).find(|&i| b.is_valid(i) && std::str::from_utf8(b.value(i)).is_err()) {
                    Some(i) => Bad::value(i, name, format_args!("\"{}\"", b.value(i).escape_ascii()), "UTF-8 text"),
                    None => Bad::column_type(name, t, "UTF-8 text"),
                },
                Err(e) => Bad::arrow(name, e),
            }
        }),
        t => Err(Bad::column_type(name, t, "text")),
    }
}

/// A dictionary of numbers (a pandas category of integers, say) as its plain values; any other
/// column as it is. Dictionaries of text are kept: [`text`] reads their values once.
///
/// # Errors
/// Arrow cannot expand the dictionary.
pub fn numbers(a: &ArrayRef, name: &str) -> Result<ArrayRef, Bad> {
    match a.data_type() {
        DataType::Dictionary(_, values) if !holds_text(values) => cast(a, values).map_err(|e| Bad::arrow(name, e)),
        _ => Ok(a.clone()),
    }
}

/// A float column's values as integers, when every value holds a whole number that f64 stores
/// exactly (|v| <= 2^53): pandas stores an integer column with gaps as floats. Nulls stay null.
///
/// # Errors
/// The index and value of the first value that is not such a whole number.
///
/// # Example
/// ```
/// use arrow::array::{Array, Float64Array};
/// use fairshare_base::read::parquet_columns::whole_numbers;
/// let ints = whole_numbers(&Float64Array::from(vec![Some(1767830400.0), None])).unwrap();
/// assert_eq!((ints.value(0), ints.is_null(1)), (1767830400, true));
/// assert_eq!(whole_numbers(&Float64Array::from(vec![2.0, 2.5])).unwrap_err(), (1, 2.5));
/// ```
pub fn whole_numbers(f: &Float64Array) -> Result<Int64Array, (usize, f64)> {
    let whole = |v: f64| v.fract() == 0.0 && v.abs() <= (1u64 << 53) as f64;
    if let Some(i) = (0..f.len()).find(|&i| f.is_valid(i) && !whole(f.value(i))) {
        return Err((i, f.value(i)));
    }
    Ok(f.iter().map(|v| v.map(|v| v as i64)).collect())
}

/// Column `name` as integers of type `T` no greater than `max`: integers of any width that fit,
/// floats holding whole numbers (pandas stores an integer column with gaps as floats), and text
/// read by `parse` (the CSV reader's parse of the field), blank text being null; in a dictionary
/// or not.
///
/// # Errors
/// The first value out of range, with a fraction, not a number or refused by `parse`, or a
/// column of another type, saying that `expected` was.
pub fn integers<T>(
    a: &ArrayRef,
    name: &str,
    expected: &str,
    max: T::Native,
    parse: impl Fn(&str) -> Option<T::Native>,
) -> Result<PrimitiveArray<T>, Bad>
where
    T: ArrowNumericType,
    T::Native: TryFrom<i64> + TryFrom<u64> + Display,
{
    let a = &numbers(a, name)?;
    let values: PrimitiveArray<T> = match a.data_type() {
        t if *t == T::DATA_TYPE => a.as_primitive::<T>().clone(),
        t if t.is_signed_integer() => {
            let wide = cast(a, &DataType::Int64).map_err(|e| Bad::arrow(name, e))?;
            narrow(wide.as_primitive::<Int64Type>())
                .map_err(|i| Bad::value(i, name, wide.as_primitive::<Int64Type>().value(i), expected))?
        }
        t if t.is_unsigned_integer() => {
            let wide = cast(a, &DataType::UInt64).map_err(|e| Bad::arrow(name, e))?;
            narrow(wide.as_primitive::<UInt64Type>())
                .map_err(|i| Bad::value(i, name, wide.as_primitive::<UInt64Type>().value(i), expected))?
        }
        t if t.is_floating() => {
            let f = cast(a, &DataType::Float64).map_err(|e| Bad::arrow(name, e))?;
            let f = f.as_primitive::<Float64Type>();
            let whole = whole_numbers(f).map_err(|(i, v)| Bad::value(i, name, v, expected))?;
            narrow(&whole).map_err(|i| Bad::value(i, name, f.value(i), expected))?
        }
        t if holds_text(t) => parsed(a, name, expected, parse)?,
        t => return Err(Bad::column_type(name, t, expected)),
    };
    if arrow::compute::max(&values).is_some_and(|m| m > max) {
        let i = values.iter().position(|v| v.is_some_and(|v| v > max)).unwrap_or_default();
        return Err(Bad::value(i, name, values.value(i), expected));
    }
    Ok(values)
}

/// Column `name` as floats: floats, integers and decimals as the nearest double (as the CSV
/// reader's parse of the same digits gives), and text read by `parse`, blank text being null.
///
/// # Errors
/// The first text value `parse` refuses, or a column of another type, saying that `expected` was.
pub fn floats(
    a: &ArrayRef,
    name: &str,
    expected: &str,
    parse: impl Fn(&str) -> Option<f64>,
) -> Result<Float64Array, Bad> {
    let a = &numbers(a, name)?;
    match a.data_type() {
        t if t.is_numeric() => Ok(cast(a, &DataType::Float64).map_err(|e| Bad::arrow(name, e))?.as_primitive().clone()),
        t if holds_text(t) => parsed(a, name, expected, parse),
        t => Err(Bad::column_type(name, t, expected)),
    }
}

/// Integers as `T`, or the index of the first value `T` cannot hold.
fn narrow<W, T>(wide: &PrimitiveArray<W>) -> Result<PrimitiveArray<T>, usize>
where
    W: ArrowPrimitiveType,
    T: ArrowPrimitiveType,
    T::Native: TryFrom<W::Native>,
{
    let values = wide
        .values()
        .iter()
        .enumerate()
        // A null's slot may hold anything.
        .map(|(i, &v)| {
            T::Native::try_from(v).or_else(|_| if wide.is_valid(i) { Err(i) } else { Ok(T::Native::default()) })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PrimitiveArray::new(values.into(), wide.nulls().cloned()))
}

/// A text column read value by value with `parse`; blank values are null, as empty CSV fields are.
fn parsed<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    name: &str,
    expected: &str,
    parse: impl Fn(&str) -> Option<T::Native>,
) -> Result<PrimitiveArray<T>, Bad> {
    let text = text(a, name)?;
    (0..a.len())
        .map(|i| match text.get(i).map(str::trim) {
            None | Some("") => Ok(None),
            Some(t) => parse(t).map(Some).ok_or_else(|| Bad::value(i, name, format_args!("{t:?}"), expected)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{BinaryArray, DictionaryArray, Int8Array, ListArray, UInt32Array, UInt64Array};
    use arrow::datatypes::{Int8Type, UInt32Type};

    use super::*;

    fn message<T>(r: Result<T, Bad>) -> (Option<usize>, String) {
        let Err(bad) = r else { panic!("expected an error") };
        (bad.index, bad.message)
    }

    fn u32s(a: ArrayRef) -> Result<PrimitiveArray<UInt32Type>, Bad> {
        integers::<UInt32Type>(&a, "n", "a count", 100, |t| t.parse().ok())
    }

    #[test]
    fn integers_convert_exactly_or_name_the_value() {
        let want = UInt32Array::from(vec![Some(1), None, Some(100)]);
        assert_eq!(u32s(Arc::new(want.clone())).unwrap(), want);
        assert_eq!(u32s(Arc::new(Int64Array::from(vec![Some(1), None, Some(100)]))).unwrap(), want);
        assert_eq!(u32s(Arc::new(Float64Array::from(vec![Some(1.0), None, Some(100.0)]))).unwrap(), want);
        assert_eq!(u32s(Arc::new(StringArray::from(vec![Some("1"), Some(" "), Some("100")]))).unwrap(), want);
        let keys = Int8Array::from(vec![Some(0), None, Some(1)]);
        let dict = DictionaryArray::<Int8Type>::new(keys, Arc::new(Int64Array::from(vec![1, 100])));
        assert_eq!(u32s(Arc::new(dict)).unwrap(), want);
        let bad = |a: ArrayRef| message(u32s(a));
        assert_eq!(bad(Arc::new(Int64Array::from(vec![1, -1]))), (Some(1), "n -1: expected a count".into()));
        assert_eq!(
            bad(Arc::new(UInt64Array::from(vec![u64::MAX]))),
            (Some(0), "n 18446744073709551615: expected a count".into())
        );
        assert_eq!(bad(Arc::new(UInt32Array::from(vec![7, 101]))), (Some(1), "n 101: expected a count".into()));
        assert_eq!(bad(Arc::new(Float64Array::from(vec![0.5]))), (Some(0), "n 0.5: expected a count".into()));
        assert_eq!(bad(Arc::new(Float64Array::from(vec![f64::INFINITY]))), (Some(0), "n inf: expected a count".into()));
        assert_eq!(bad(Arc::new(StringArray::from(vec!["1", "x"]))), (Some(1), "n \"x\": expected a count".into()));
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1)])]);
        assert_eq!(bad(Arc::new(lists)), (None, "n is list<int32>: expected a count".into()));
    }

    #[test]
    fn text_keeps_dictionaries_and_refuses_what_is_not_text() {
        let dict: DictionaryArray<Int8Type> = vec!["a", "b", "a"].into_iter().collect();
        let Text::Dict(keys, values) = text(&(Arc::new(dict) as ArrayRef), "user").unwrap() else {
            panic!("a dictionary")
        };
        assert_eq!((keys.values().to_vec(), values.value(1)), (vec![0, 1, 0], "b"));
        let ints: ArrayRef = Arc::new(Int8Array::from(vec![7]));
        assert_eq!(strings(&ints, "user").unwrap().value(0), "7");
        let bytes: ArrayRef = Arc::new(BinaryArray::from(vec![&b"ok"[..], b"\xffx"]));
        assert_eq!(message(strings(&bytes, "user")), (Some(1), "user \"\\xffx\": expected UTF-8 text".into()));
        let flags: ArrayRef = Arc::new(arrow::array::BooleanArray::from(vec![true]));
        assert_eq!(message(strings(&flags, "user")), (None, "user is boolean: expected text".into()));
    }
}
