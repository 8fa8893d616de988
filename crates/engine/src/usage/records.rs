//! Job-record inputs: the canonical CSV and Parquet records, and the format switch over every
//! reader.
//!
//! The canonical header is `job_id,user,account,partition,qos,start,end,tres_alloc` (any column
//! order, extra columns ignored); times are epoch seconds or `YYYY-MM-DDTHH:MM:SS` (UTC); `end`
//! empty while running; `qos` empty for none. An unquoted `tres_alloc` with commas, as the last
//! column, is taken whole. An optional `time_limit` column (minutes or a Slurm time string,
//! `UNLIMITED`; empty when unknown) feeds `TRESRunMins`.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array, Int64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit, UInt64Type};
use arrow::error::ArrowError;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};

use super::charge::{ChargeContext, Shape, UsageCharger};
use super::lines::{LineParser, read_header, read_lines};
use super::swf::SwfOptions;
use super::{JobRef, JobSink};
use crate::config::time::job_time_limit;
use fairshare_base::error::{Error, Result};
use fairshare_base::named::{Choice, Named};
use fairshare_base::read::fields::{recycle, split_fields, trim_field};
use fairshare_base::read::parquet_columns::{self, Bad, Text, holds_text, integers, whole_numbers};
use fairshare_base::read::row_groups::{check_group, first_rows, group_reader, guarded, open_checked, open_unchecked};
use fairshare_base::read::time::parse_time_field;

/// The formats job records come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFormat {
    /// Canonical CSV (`job_id,user,account,partition,qos,start,end,tres_alloc`).
    Csv,
    /// The canonical columns as Parquet (names as strings or dictionaries, times as integers or
    /// timestamps).
    Parquet,
    /// `sacct -P` / `-p` text with a header.
    Sacct,
    /// `sacct --json`.
    SacctJson,
    /// A Standard Workload Format trace, with its tree layout and what an unknown wait charges.
    Swf(SwfOptions),
    /// The `jobs` table of a flux-accounting database.
    FluxDb,
}

/// The formats' names on the command line and in site files; a trace named `swf` gets the
/// default [`SwfOptions`], which the SWF flags then change.
impl Named for JobFormat {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(JobFormat::Csv, "csv", ""),
        Choice::new(JobFormat::Parquet, "parquet", ""),
        Choice::new(JobFormat::Sacct, "sacct", ""),
        Choice::new(JobFormat::SacctJson, "sacct-json", "`sacct --json` (its `jobs` array)"),
        Choice::new(JobFormat::Swf(SwfOptions::DEFAULT), "swf", ""),
        Choice::new(JobFormat::FluxDb, "flux-db", "A flux-accounting database's `jobs` table"),
    ];

    /// The format's name, whatever a trace's options.
    fn name(self) -> &'static str {
        match self {
            JobFormat::Swf(_) => "swf",
            f => Self::CHOICES.iter().find(|c| c.value == f).map_or("?", |c| c.name),
        }
    }
}

impl JobFormat {
    /// Guesses the format: Parquet's or SQLite's magic bytes, a JSON object with `"jobs"` (sacct
    /// --json), an `.swf` name or a `;` comment line, a `|` in the header (sacct), else canonical CSV. An SWF trace gets the
    /// default [`SwfOptions`] (group → user, an unknown wait taken as zero).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn detect(path: &Path) -> Result<JobFormat> {
        let head = &fairshare_base::read::source::head(path, 4096)?;
        if head.starts_with(b"PAR1") {
            return Ok(JobFormat::Parquet);
        }
        if head.starts_with(b"SQLite format 3\0") {
            return Ok(JobFormat::FluxDb);
        }
        // A JSON object naming `jobs` early: sacct's response (its `jobs` key comes first).
        if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
            && memchr::memmem::find(head, b"\"jobs\"").is_some()
        {
            return Ok(JobFormat::SacctJson);
        }
        let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
        let swf_name = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("swf"));
        Ok(if swf_name || first.starts_with(b";") {
            JobFormat::Swf(SwfOptions::default())
        } else if first.contains(&b'|') {
            JobFormat::Sacct
        } else {
            JobFormat::Csv
        })
    }
}

/// Streams the records of `path` into `sink`, in file order.
///
/// # Errors
/// A malformed record (naming the file and line) or the sink's own error.
pub fn for_each_job(path: &Path, format: JobFormat, sink: &mut JobSink<'_>) -> Result<()> {
    match format {
        JobFormat::Csv => read_csv(path, sink),
        JobFormat::Parquet => read_parquet(path, sink),
        JobFormat::Sacct => super::sacct::read(path, sink),
        JobFormat::SacctJson => super::sacct_json::read(path, sink),
        JobFormat::Swf(options) => super::swf::read(path, options, sink),
        JobFormat::FluxDb => super::flux_db::jobs::read(path, sink),
    }
}

const CANONICAL: &str = "job_id,user,account,partition,qos,start,end,tres_alloc";

/// Streams canonical CSV records.
///
/// # Errors
/// A missing column or a bad value, naming the line.
pub fn read_csv(path: &Path, sink: &mut JobSink<'_>) -> Result<()> {
    let (lines, offset, first) = CsvLines::open(path)?;
    read_lines(path, &lines, offset, first, sink)
}

/// The column layout of one canonical CSV file, parsing its data lines.
pub(crate) struct CsvLines {
    width: usize,
    c_id: usize,
    c_user: usize,
    c_account: usize,
    c_part: usize,
    c_qos: usize,
    c_start: usize,
    c_end: usize,
    c_tres: usize,
    c_limit: Option<usize>,
}

impl CsvLines {
    /// Reads the header of `path`: the layout, the byte offset after the header and the number of
    /// the first data line.
    ///
    /// # Errors
    /// An empty file or a header without a canonical column.
    pub(crate) fn open(path: &Path) -> Result<(Self, u64, u64)> {
        let Some((header, offset, line_no)) = read_header(path)? else {
            return Err(Error::input(path, None, format!("empty file: expected the header {CANONICAL}")));
        };
        let names: Vec<String> = {
            let mut f = Vec::new();
            split_fields(&header, &mut f).map_err(|m| Error::input(path, line_no, m))?;
            f.iter().map(|h| h.trim().to_string()).collect()
        };
        let col = |n: &str| {
            names
                .iter()
                .position(|h| h == n)
                .ok_or_else(|| Error::input(path, line_no, format!("missing column {n:?}: the header is {CANONICAL}")))
        };
        let lines = CsvLines {
            width: names.len(),
            c_id: col("job_id")?,
            c_user: col("user")?,
            c_account: col("account")?,
            c_part: col("partition")?,
            c_qos: col("qos")?,
            c_start: col("start")?,
            c_end: col("end")?,
            c_tres: col("tres_alloc")?,
            c_limit: names.iter().position(|h| h == "time_limit"),
        };
        Ok((lines, offset, line_no + 1))
    }
}

impl LineParser for CsvLines {
    /// The split fields (their allocation reused) and the rejoined unquoted TRES tail.
    type Scratch = (Vec<Cow<'static, str>>, String);

    fn parse(
        &self,
        path: &Path,
        line: &str,
        line_no: u64,
        (spare, joined): &mut Self::Scratch,
        sink: &mut JobSink<'_>,
    ) -> Result<()> {
        let err = |m: String| Error::input(path, line_no, m);
        let mut fields = recycle(std::mem::take(spare));
        split_fields(line, &mut fields).map_err(|m| err(m.into()))?;
        let tres_last = self.c_tres == self.width - 1;
        let tres: &str = if fields.len() > self.width && tres_last {
            joined.clear();
            for (k, f) in fields[self.c_tres..].iter().enumerate() {
                if k > 0 {
                    joined.push(',');
                }
                joined.push_str(f);
            }
            joined
        } else if fields.len() != self.width {
            return Err(err(format!("expected {} fields, found {}", self.width, fields.len())));
        } else {
            &fields[self.c_tres]
        };
        let time = |c: usize, what: &str| parse_time_field(&fields[c]).map_err(|m| err(format!("{what}: {m}")));
        let time_limit = match self.c_limit {
            Some(c) => job_time_limit(&fields[c]).map_err(|m| err(format!("time_limit: {m}")))?,
            None => None,
        };
        let job = JobRef {
            job_id: parse_job_id(&fields[self.c_id]).map_err(err)?,
            user: trim_field(&fields[self.c_user]),
            account: trim_field(&fields[self.c_account]),
            partition: trim_field(&fields[self.c_part]),
            qos: trim_field(&fields[self.c_qos]),
            start: time(self.c_start, "start")?,
            end: time(self.c_end, "end")?,
            tres_alloc: trim_field(tres),
            time_limit,
            line: line_no,
            skip: None,
            started_at_submit: false,
        };
        let result = sink(&job);
        *spare = recycle(fields);
        result
    }
}

/// Parses a job id, as CSV and Parquet text hold it.
fn parse_job_id(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| format!("job_id {text:?} is not an integer"))
}

/// A timestamp column as epoch seconds.
fn seconds(a: &ArrayRef) -> std::result::Result<Int64Array, ArrowError> {
    let a = cast(a, &DataType::Timestamp(TimeUnit::Second, None))?;
    Ok(cast(&a, &DataType::Int64)?.as_primitive::<Int64Type>().clone())
}

/// Column `name` (`start` or `end`) as epoch seconds, null where unset. Integers and timestamps
/// convert directly; floats must hold whole seconds (pandas stores an integer column with gaps as
/// floats); text is read as in CSV (epoch seconds or `YYYY-MM-DDTHH:MM:SS`; empty, `Unknown`,
/// `None` unset). A plain cast would turn text it cannot parse, or integers beyond 64-bit signed
/// seconds, into nulls, silently dropping the job's usage.
///
/// # Errors
/// The first value that is not a time, and why, or a column of another type.
fn times(a: &ArrayRef, name: &str) -> std::result::Result<Int64Array, Bad> {
    match a.data_type() {
        DataType::Timestamp(..) => seconds(a).map_err(|e| Bad::arrow(name, e)),
        // Text never reaches the parse: this branch takes integer columns only.
        t if t.is_integer() => integers::<Int64Type>(a, name, "epoch seconds", i64::MAX, |_| None),
        t if t.is_floating() => {
            let f = cast(a, &DataType::Float64).map_err(|e| Bad::arrow(name, e))?;
            whole_numbers(f.as_primitive())
                .map_err(|(i, v)| Bad::at(i, format!("{name}: {v} is not a whole number of seconds")))
        }
        t if holds_text(t) => {
            let text = parquet_columns::text(a, name)?;
            // A null reads as empty: unset.
            (0..a.len())
                .map(|i| {
                    parse_time_field(text.get(i).unwrap_or_default()).map_err(|m| Bad::at(i, format!("{name}: {m}")))
                })
                .collect()
        }
        t => Err(Bad::column_type(name, t, "epoch seconds, a timestamp or text")),
    }
}

/// The `time_limit` column: whole minutes as integers, or text as in CSV.
///
/// # Errors
/// The first value that is not a time limit, or a column of another type.
fn time_limits(a: &ArrayRef) -> std::result::Result<Vec<Option<u32>>, Bad> {
    let name = "time_limit";
    match a.data_type() {
        t if t.is_integer() => {
            let minutes = integers::<UInt64Type>(a, name, "minutes", u64::from(u32::MAX), |_| None)?;
            Ok((0..a.len()).map(|i| minutes.is_valid(i).then(|| minutes.value(i) as u32)).collect())
        }
        t if holds_text(t) => {
            let text = parquet_columns::text(a, name)?;
            (0..a.len())
                .map(|i| {
                    job_time_limit(text.get(i).unwrap_or_default()).map_err(|m| Bad::at(i, format!("{name}: {m}")))
                })
                .collect()
        }
        t => Err(Bad::column_type(name, t, "minutes or a Slurm time string")),
    }
}

/// Streams canonical Parquet records, batch by batch (one row group's worth at a time).
///
/// # Errors
/// Not Parquet, a missing column, a column of the wrong type, a value that does not convert
/// (saying what was expected) or a null job id, naming the row (1-based).
pub fn read_parquet(path: &Path, sink: &mut JobSink<'_>) -> Result<()> {
    guarded(path, || {
        let (file, metadata) = open_checked(path, ArrowReaderOptions::new())?;
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| Error::format(path, e))?;
        read_batches(path, reader, 0, sink)
    })
}

const BATCH_ROWS: usize = 64 * 1024;

/// Charges a canonical Parquet file row group by row group, a row group per thread at a time
/// (`ChargeContext::charge_parts`): the sums are a sequential read's, however the file is grouped.
///
/// # Errors
/// As [`read_parquet`], or the charger's error, for the first failing row group.
pub fn charge_parquet<'c, 'a>(path: &Path, ctx: &'c ChargeContext<'a>) -> Result<UsageCharger<'c, 'a>> {
    guarded(path, || {
        // The writer's Arrow schema hint is ignored: its dictionaries would make the reader intern
        // every value of a user or account column whose pages fell back to plain encoding (names
        // are many); `charged_columns` picks the types.
        let meta = open_unchecked(path, ArrowReaderOptions::new().with_skip_arrow_metadata(true))?;
        let (meta, columns) = charged_columns(path, meta)?;
        let count = meta.metadata().row_groups().len();
        let first_rows = first_rows(&meta);
        let charge_group = |&g: &usize, charger: &mut UsageCharger<'c, 'a>| {
            check_group(path, meta.metadata(), g)?;
            let read = |mask: &ProjectionMask| group_reader(path, &meta, g, BATCH_ROWS, mask.clone());
            let ids_read = columns.ids_left_out.is_none();
            let charged = charge_batches(path, read(&columns.charged)?, first_rows[g], ids_read, charger);
            match (&charged, &columns.ids_left_out) {
                // The same record fails first again, now named by its job id.
                (Err(_), Some(ids)) => {
                    charge_batches(path, read(&ids.with_ids)?, first_rows[g], true, &mut ctx.charger()).and(charged)
                }
                _ => charged,
            }
        };
        let mut groups = 0..count;
        let next = move || Ok(groups.next().map(|g| (g, 1)));
        let mut total = ctx.charge_parts(next, |_| count as u64, |g, charger| charge_group(&g, charger))?;
        if let (Some((job, line)), Some(ids)) = (&mut total.report_mut().first_unmatched, &columns.ids_left_out) {
            *job = job_id_at(path, &meta, &first_rows, *line, &ids.alone)?;
        }
        Ok(total)
    })
}

/// The columns charging reads.
struct ChargedColumns {
    charged: ProjectionMask,
    /// When `charged` leaves the job ids out (they need no check: [`ids_need_no_check`]), the
    /// masks that read them again.
    ids_left_out: Option<IdMasks>,
}

/// The masks that name a record whose job id charging did not read.
struct IdMasks {
    /// The charged columns and the ids: a failing row group is charged again with them.
    with_ids: ProjectionMask,
    /// The ids alone: the first unmatched record's is read with it.
    alone: ProjectionMask,
}

/// The job id of the record on row `row` (1-based) of the file, its groups' first rows
/// `first_rows` before them, read through `ids` (the `job_id` column alone).
///
/// # Errors
/// The file cannot be read again, or the id does not convert.
fn job_id_at(
    path: &Path,
    meta: &ArrowReaderMetadata,
    first_rows: &[u64],
    row: u64,
    ids: &ProjectionMask,
) -> Result<u64> {
    let g = first_rows.partition_point(|&first| first < row).saturating_sub(1);
    let mut skip = (row - first_rows[g] - 1) as usize;
    for batch in group_reader(path, meta, g, BATCH_ROWS, ids.clone())? {
        let batch = batch.map_err(|e| Error::format(path, e))?;
        if skip < batch.num_rows() {
            let ids = batch.column_by_name("job_id").map(job_ids);
            let ids = ids.ok_or_else(|| Error::input(path, row, "job_id: not read again"))?;
            return Ok(ids.map_err(|b| b.error(path, row - 1 - skip as u64))?.value(skip));
        }
        skip -= batch.num_rows();
    }
    Err(Error::input(path, row, format!("row {row}: not in the file read again")))
}

/// Whether the `job_id` column of `meta`'s file holds integers that are never null nor negative,
/// by its footer: a required column or statistics counting no nulls in every row group, and an
/// unsigned type or a non-negative minimum in every row group. Charging then reads the ids only
/// to name a record (a tenth of the bytes it would decompress otherwise).
fn ids_need_no_check(meta: &ArrowReaderMetadata) -> bool {
    use parquet::basic::Repetition;
    use parquet::file::statistics::Statistics;

    let Some(field) = meta.schema().fields().iter().find(|f| f.name() == "job_id") else {
        return false;
    };
    let unsigned = match field.data_type() {
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => true,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => false,
        _ => return false,
    };
    let parquet = meta.metadata();
    let Some(leaf) =
        parquet.file_metadata().schema_descr().columns().iter().position(|c| c.path().parts() == ["job_id"])
    else {
        return false;
    };
    let required = parquet.file_metadata().schema_descr().column(leaf).self_type().get_basic_info().repetition()
        == Repetition::REQUIRED;
    parquet.row_groups().iter().all(|g| {
        let stats = g.column(leaf).statistics();
        let no_nulls = required || stats.is_some_and(|s| s.null_count_opt() == Some(0));
        let not_negative = unsigned
            || match stats {
                Some(Statistics::Int32(s)) => s.min_opt().is_some_and(|&m| m >= 0),
                Some(Statistics::Int64(s)) => s.min_opt().is_some_and(|&m| m >= 0),
                _ => false,
            };
        no_nulls && not_negative
    })
}

/// `meta` with its text read as charging wants it, and the mask of the columns charging reads.
/// Partitions, QOS and TRES strings come as dictionaries (as writers encode them: they repeat),
/// so that a batch bills each combination once ([`Shape`]). The other text comes as views: a view
/// holds a short name itself and points into the page for a longer one, where plain strings copy
/// every value.
///
/// # Errors
/// Arrow cannot take the schema (it always can: only string types change).
fn charged_columns(path: &Path, meta: ArrowReaderMetadata) -> Result<(ArrowReaderMetadata, ChargedColumns)> {
    let wanted = |name: &str| CANONICAL.split(',').chain(["time_limit"]).any(|c| c == name);
    let schema = meta.schema();
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 => {
                let text = if ["partition", "qos", "tres_alloc"].contains(&f.name().as_str()) {
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
                } else {
                    DataType::Utf8View
                };
                Arc::new(f.as_ref().clone().with_data_type(text))
            }
            _ => f.clone(),
        })
        .collect();
    let options = ArrowReaderOptions::new()
        .with_skip_arrow_metadata(true)
        .with_schema(Arc::new(arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone())));
    let parquet = meta.metadata().clone();
    let roots: Vec<usize> = (0..schema.fields().len()).filter(|&i| wanted(schema.field(i).name())).collect();
    let projected = ArrowReaderMetadata::try_new(parquet, options).map_err(|e| Error::format(path, e))?;
    let mask = |roots: &mut dyn Iterator<Item = usize>| ProjectionMask::roots(meta.parquet_schema(), roots);
    let is_id = |&i: &usize| schema.field(i).name() == "job_id";
    let columns = match ids_need_no_check(&meta) {
        true => ChargedColumns {
            charged: mask(&mut roots.iter().copied().filter(|i| !is_id(i))),
            ids_left_out: Some(IdMasks {
                with_ids: mask(&mut roots.iter().copied()),
                alone: mask(&mut roots.iter().copied().filter(is_id)),
            }),
        },
        false => ChargedColumns { charged: mask(&mut roots.into_iter()), ids_left_out: None },
    };
    Ok((projected, columns))
}

/// The canonical columns of one batch of records, converted.
struct Columns {
    /// `None` when charging left the ids out ([`ids_need_no_check`]).
    id: Option<arrow::array::UInt64Array>,
    start: Int64Array,
    end: Int64Array,
    user: Text,
    account: Text,
    partition: Text,
    qos: Text,
    tres: Text,
    limits: Option<Vec<Option<u32>>>,
}

impl Columns {
    /// The columns of `batch`, whose first row is row `first_row + 1` of the file; its job ids
    /// unless `ids_read` is false (charging left them out).
    ///
    /// # Errors
    /// A missing column, or the first value that does not convert, naming its row.
    fn of(path: &Path, batch: &RecordBatch, first_row: u64, ids_read: bool) -> Result<Self> {
        let col = |n: &str| {
            batch
                .column_by_name(n)
                .ok_or_else(|| Error::input(path, None, format!("missing column {n:?}: the columns are {CANONICAL}")))
        };
        let text = |n: &str| col(n).and_then(|a| parquet_columns::text(a, n).map_err(|b| b.error(path, first_row)));
        let time = |n: &str| col(n).and_then(|a| times(a, n).map_err(|b| b.error(path, first_row)));
        Ok(Columns {
            id: match ids_read {
                true => Some(col("job_id").and_then(|a| job_ids(a).map_err(|b| b.error(path, first_row)))?),
                false => None,
            },
            start: time("start")?,
            end: time("end")?,
            user: text("user")?,
            account: text("account")?,
            partition: text("partition")?,
            qos: text("qos")?,
            tres: text("tres_alloc")?,
            limits: match batch.column_by_name("time_limit") {
                Some(a) => Some(time_limits(a).map_err(|b| b.error(path, first_row))?),
                None => None,
            },
        })
    }

    /// Record `i`, row `row` of the file (1-based). A null text reads as empty.
    ///
    /// # Errors
    /// A null job id.
    fn job(&self, path: &Path, i: usize, row: u64) -> Result<JobRef<'_>> {
        if self.id.as_ref().is_some_and(|id| id.is_null(i)) {
            return Err(Error::input(path, row, format!("row {row}: job_id is null")));
        }
        Ok(JobRef {
            // Left out, the ids are read again for a record that is named ([`charge_parquet`]).
            job_id: self.id.as_ref().map_or(0, |id| id.value(i)),
            user: name(&self.user, i),
            account: name(&self.account, i),
            partition: name(&self.partition, i),
            qos: name(&self.qos, i),
            start: self.start(i),
            end: self.end(i),
            tres_alloc: name(&self.tres, i),
            time_limit: self.time_limit(i),
            line: row,
            skip: None,
            started_at_submit: false,
        })
    }

    /// Record `i`'s start.
    fn start(&self, i: usize) -> Option<i64> {
        self.start.is_valid(i).then(|| self.start.value(i))
    }

    /// Record `i`'s end; `None` while it runs.
    fn end(&self, i: usize) -> Option<i64> {
        self.end.is_valid(i).then(|| self.end.value(i))
    }

    /// Record `i`'s time limit, when the records have one.
    fn time_limit(&self, i: usize) -> Option<u32> {
        self.limits.as_ref().and_then(|l| l[i])
    }
}

/// The `job_id` column as integers.
///
/// # Errors
/// The first value that is not a non-negative integer.
fn job_ids(a: &ArrayRef) -> std::result::Result<arrow::array::UInt64Array, Bad> {
    integers::<UInt64Type>(a, "job_id", "a non-negative integer", u64::MAX, |t| parse_job_id(t).ok())
}

/// Value `i` of a name column; a null reads as empty.
fn name(t: &Text, i: usize) -> &str {
    t.get(i).unwrap_or_default()
}

/// Feeds the rows of `reader` to `sink`; `first_row` is the number of rows before them in the file.
fn read_batches(path: &Path, reader: ParquetRecordBatchReader, first_row: u64, sink: &mut JobSink<'_>) -> Result<()> {
    let mut row = first_row;
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(path, e))?;
        let columns = Columns::of(path, &batch, row, true)?;
        for i in 0..batch.num_rows() {
            row += 1;
            sink(&columns.job(path, i, row)?)?;
        }
    }
    Ok(())
}

/// The billing [`Shape`]s of a batch whose partition, TRES and QOS columns are dictionaries.
struct Shapes<'c> {
    partition: &'c Int32Array,
    tres: &'c Int32Array,
    qos: &'c Int32Array,
    /// Distinct TRES strings: a (partition, TRES) shape is `partition × tres_values + tres`.
    tres_values: usize,
    bills: usize,
    factors: usize,
}

/// At most this many (partition, TRES) shapes per batch; past it (TRES strings nearly unique)
/// each record is billed through the charger's own caches.
const MAX_SHAPES: usize = 1 << 16;

impl<'c> Shapes<'c> {
    fn of(c: &'c Columns) -> Option<Self> {
        let (Text::Dict(partition, p), Text::Dict(tres, t), Text::Dict(qos, q)) = (&c.partition, &c.tres, &c.qos)
        else {
            return None;
        };
        let bills = p.len().checked_mul(t.len()).filter(|&n| n <= MAX_SHAPES)?;
        Some(Shapes { partition, tres, qos, tres_values: t.len(), bills, factors: q.len() })
    }

    /// Record `i`'s shape; `None` for a null key.
    fn get(&self, i: usize) -> Option<Shape> {
        let key = |k: &Int32Array| k.is_valid(i).then(|| k.value(i) as usize);
        let tres = key(self.tres)?;
        Some(Shape { bill: key(self.partition)? * self.tres_values + tres, qos: key(self.qos)?, tres })
    }
}

/// Charges the rows of `reader` (`first_row` rows before them in the file), looking up their
/// associations a batch at a time; `ids_read`: whether it reads the job ids.
fn charge_batches(
    path: &Path,
    reader: ParquetRecordBatchReader,
    first_row: u64,
    ids_read: bool,
    charger: &mut UsageCharger<'_, '_>,
) -> Result<()> {
    let mut row = first_row;
    let mut assocs = Vec::with_capacity(BATCH_ROWS);
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(path, e))?;
        let c = Columns::of(path, &batch, row, ids_read)?;
        assocs.clear();
        let (ctx, n) = (charger.context(), batch.num_rows());
        match (&c.user, &c.account, &c.partition) {
            // The common case, without a test per name and row of which kind of column it is.
            (Text::View(u), Text::View(a), Text::Dict(keys, parts))
                if u.null_count() + a.null_count() + keys.null_count() + parts.null_count() == 0 =>
            {
                ctx.find_batch(n, |i| (u.value(i), a.value(i), parts.value(keys.value(i) as usize)), &mut assocs);
            }
            _ => ctx.find_batch(n, |i| (name(&c.user, i), name(&c.account, i), name(&c.partition, i)), &mut assocs),
        }
        let shapes = Shapes::of(&c);
        if let Some(s) = &shapes {
            charger.new_shapes(s.bills, s.factors, s.tres_values);
        }
        for (i, &assoc) in assocs.iter().enumerate() {
            row += 1;
            let shape = shapes.as_ref().and_then(|s| s.get(i));
            if let Some(shape) = shape
                && c.id.as_ref().is_none_or(|id| id.is_valid(i))
                && charger.charge_known(assoc, shape, c.start(i), c.end(i), c.time_limit(i))
            {
                continue;
            }
            charger.charge_at(&c.job(path, i, row)?, path, assoc, shape)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str) -> Result<Vec<(u64, String, Option<i64>, Option<i64>, String, u64)>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.csv");
        std::fs::write(&path, text).unwrap();
        let mut out = Vec::new();
        read_csv(&path, &mut |j| {
            out.push((j.job_id, j.qos.to_string(), j.start, j.end, j.tres_alloc.to_string(), j.line));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn reads_any_column_order_and_an_unquoted_tres_tail() {
        let got = collect(
            "user,job_id,account,partition,qos,start,end,tres_alloc\n\
             u1,7,a,batch,,2026-01-01T00:00:00,,cpu=16,mem=64G,node=1\n\n\
             u2,8,a,batch,high,100,Unknown,\"cpu=2,node=1\"\n",
        )
        .unwrap();
        assert_eq!(got[0], (7, String::new(), Some(1_767_225_600), None, "cpu=16,mem=64G,node=1".into(), 2));
        assert_eq!(got[1], (8, "high".into(), Some(100), None, "cpu=2,node=1".into(), 4));
    }

    #[test]
    fn errors_name_the_line() {
        let e = collect("job_id,user,account,partition,qos,start,end,tres_alloc\n1,u,a,p,,x,,cpu=1\n")
            .unwrap_err()
            .to_string();
        // The time syntax the message goes on to give is the time parser's.
        assert!(e.contains("jobs.csv:2: start: time \"x\" is neither epoch seconds nor "), "{e}");
        let e = collect("job_id,user\n").unwrap_err().to_string();
        assert!(e.contains(":1: missing column \"account\""), "{e}");
        let e = collect("").unwrap_err().to_string();
        assert!(e.contains("empty file"), "{e}");
        let e = collect("job_id,user,account,partition,qos,start,end,tres_alloc,state\n1,u,a,p,,1,2,cpu=1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2: expected 9 fields, found 8"), "{e}");
    }

    /// Parquet `start`/`end` columns as other tools write them: text as in CSV, floats holding
    /// whole seconds (pandas' integers with gaps), timestamps; none may turn into a silent null.
    #[test]
    fn parquet_time_columns_of_any_kind_read_as_csv_does() {
        use std::sync::Arc;

        use arrow::array::{Float64Array, RecordBatch, StringArray, TimestampMillisecondArray, UInt64Array};

        let read = |start: ArrayRef, end: ArrayRef| -> Result<Vec<(Option<i64>, Option<i64>)>> {
            let n = start.len();
            let text = |v: &str| Arc::new(StringArray::from_iter_values(std::iter::repeat_n(v, n))) as ArrayRef;
            let batch = RecordBatch::try_from_iter([
                ("job_id", Arc::new(UInt64Array::from_iter_values(1..=n as u64)) as ArrayRef),
                ("user", text("u")),
                ("account", text("a")),
                ("partition", text("p")),
                ("qos", text("")),
                ("start", start),
                ("end", end),
                ("tres_alloc", text("cpu=1")),
            ])
            .unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("jobs.parquet");
            let mut w =
                parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None)
                    .unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            let mut out = Vec::new();
            read_parquet(&path, &mut |j| {
                out.push((j.start, j.end));
                Ok(())
            })?;
            Ok(out)
        };
        let strings = |v: &[Option<&str>]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
        let floats = |v: &[Option<f64>]| Arc::new(Float64Array::from(v.to_vec())) as ArrayRef;
        let expected = vec![(Some(1_767_225_600), Some(1_767_229_200)), (Some(100), None), (None, None)];

        let text = read(
            strings(&[Some("2026-01-01T00:00:00"), Some("100"), None]),
            strings(&[Some("1767229200"), Some("Unknown"), Some("")]),
        );
        assert_eq!(text.unwrap(), expected);
        let whole =
            read(floats(&[Some(1_767_225_600.0), Some(100.0), None]), floats(&[Some(1_767_229_200.0), None, None]));
        assert_eq!(whole.unwrap(), expected);
        let ms = |v: &[Option<i64>]| Arc::new(TimestampMillisecondArray::from(v.to_vec())) as ArrayRef;
        let stamps =
            read(ms(&[Some(1_767_225_600_000), Some(100_000), None]), ms(&[Some(1_767_229_200_000), None, None]));
        assert_eq!(stamps.unwrap(), expected);

        let e = read(strings(&[Some("100"), Some("yesterday"), None]), floats(&[None, None, None])).unwrap_err();
        assert!(
            e.to_string().contains("jobs.parquet:2: row 2: start: time \"yesterday\" is neither epoch seconds nor "),
            "{e}"
        );
        let e = read(floats(&[Some(1.0), Some(2.0), Some(2.5)]), floats(&[None, None, None])).unwrap_err();
        assert!(e.to_string().ends_with("jobs.parquet:3: row 3: start: 2.5 is not a whole number of seconds"), "{e}");
    }
}
