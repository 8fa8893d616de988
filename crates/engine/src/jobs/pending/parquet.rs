//! The Parquet queue: the canonical columns as any tool types them (integers, whole floats,
//! timestamps or text; names plain or dictionary-encoded), read a row group per thread. A batch of
//! typed columns is appended a column at a time; one that needs checking value by value goes row
//! by row, as the CSV reader does, so the first bad row is named.

use parquet::arrow::ProjectionMask;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringViewArray};
use arrow::compute::{cast, cast_with_options};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use rayon::prelude::*;

use super::columns::{Cell, Columns};
use super::queue::{DEFAULT_URGENCY, KeptTres, NICE_RANGE, NO_VAL, Names, PendingFormat, PendingJobs};
use super::tree_names::TreeNames;
use crate::config::tres::{Tres, read_kept_counts};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::interner::Interner;
use fairshare_base::read::parquet_columns::{Bad, STRICT, Text, holds_text, numbers, strings, text, whole_numbers};
use fairshare_base::read::row_groups::{check_group, first_rows, group_reader, guarded, open_unchecked};

impl PendingJobs {
    /// Reads every row group of `groups`, a wave of one per thread at a time.
    ///
    /// # Errors
    /// A missing column or a bad value, naming the first bad row of the file.
    pub(super) fn read_parquet(&mut self, mut groups: ParquetRowGroups) -> Result<()> {
        self.reserve(groups.rows() as usize);
        // Each row group's chunk has its own name ids; appended in file order, names get the ids a
        // sequential read gives them and the first bad row in the file is the one reported.
        while let Some(chunks) = groups.next_wave() {
            for chunk in chunks {
                self.append(chunk?);
            }
        }
        Ok(())
    }

    /// Reads one record batch; `row` counts the rows before it and is advanced past it.
    fn push_batch(
        &mut self,
        path: &Path,
        batch: &RecordBatch,
        row: &mut u64,
        kept: &mut KeptTres,
        tree: Option<&TreeNames>,
    ) -> Result<()> {
        let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        let cols = Columns::resolve(&names).map_err(|m| Error::input(path, None, m))?;
        let name_columns = [cols.user, cols.account, cols.partition, cols.qos];
        let number_columns = [
            cols.job_id,
            cols.submit,
            cols.accrue,
            cols.min_nodes,
            cols.cpus,
            cols.time_limit,
            cols.nice,
            cols.site_factor,
        ];
        // Only the columns read are converted: an extra column may hold anything.
        let mut columns: Vec<Column> = batch
            .columns()
            .iter()
            .zip(&names)
            .enumerate()
            .map(|(c, (a, name))| match c {
                c if c == cols.tres_req => Column::tres(a, name, &self.tres, &kept.names),
                c if name_columns.contains(&c) => Column::names(a, name, &mut self.names),
                c if number_columns.contains(&c) || cols.urgency == Some(c) => Column::from_array(a, name),
                _ => Ok(Column::Unused),
            })
            .collect::<std::result::Result<_, Bad>>()
            .map_err(|b| b.error(path, *row))?;
        self.intern_views(&cols, &mut columns, tree);
        if self.push_columns(&cols, &columns, batch.num_rows(), *row) {
            *row += batch.num_rows() as u64;
            return Ok(());
        }
        for i in 0..batch.num_rows() {
            *row += 1;
            let line = *row;
            let raw =
                cols.raw(|c| columns[c].cell(i)).map_err(|m| Error::input(path, line, format!("row {line}: {m}")))?;
            self.push(raw, line, kept)?;
        }
        Ok(())
    }

    /// Interns the name columns read as string views (users and accounts, which may be too many
    /// for a dictionary page): user and account together, one lookup of the pair in `tree`'s
    /// names, when both hold single names; other views name by name. A column some row of which
    /// the row path must read (a null, an empty name, a list, surrounding space) stays as it is,
    /// for the row path to read and name the row.
    fn intern_views(&mut self, cols: &Columns, columns: &mut [Column], tree: Option<&TreeNames>) {
        let single = |c: &Column| matches!(c, Column::View(v) if single_names(v));
        if let Some(tree) = tree
            && single(&columns[cols.user])
            && single(&columns[cols.account])
            && let (Column::View(user), Column::View(account)) = (&columns[cols.user], &columns[cols.account])
        {
            let (mut users, mut accounts) = (Vec::with_capacity(user.len()), Vec::with_capacity(user.len()));
            tree.push_pairs(user, account, &mut self.names, &mut users, &mut accounts);
            columns[cols.user] = Column::Ids(users);
            columns[cols.account] = Column::Ids(accounts);
        }
        for c in columns.iter_mut() {
            if let Column::View(v) = c
                && single_names(v)
            {
                *c = Column::Ids(v.iter().flatten().map(|name| self.names.intern(name)).collect());
            }
        }
    }

    /// Appends a batch of typed columns a column at a time, with no cell per value; false, with
    /// nothing appended, when a column is text or some value needs the row path, which then reports
    /// the first bad row as it does for any input.
    fn push_columns(&mut self, cols: &Columns, columns: &[Column], n: usize, rows_before: u64) -> bool {
        let jobs = self.len();
        let pushed = self.try_push_columns(cols, columns, n, rows_before).is_some();
        if !pushed {
            self.truncate(jobs);
        }
        pushed
    }

    fn try_push_columns(&mut self, cols: &Columns, columns: &[Column], n: usize, rows_before: u64) -> Option<()> {
        const U32: std::ops::RangeInclusive<i64> = 0..=u32::MAX as i64;
        let required = |c: usize| match &columns[c] {
            Column::Int(a) if a.null_count() == 0 => Some(a.values()),
            _ => None,
        };
        let job_id = required(cols.job_id)?;
        if job_id.iter().any(|&v| v < 0) {
            return None;
        }
        self.job_id.extend(job_id.iter().map(|&v| v as u64));
        let single = |c: usize, out: &mut Vec<u32>| -> Option<()> {
            match &columns[c] {
                Column::Ids(ids) => out.extend_from_slice(ids),
                Column::Names(keys, lists) if keys.null_count() == 0 && lists.iter().all(|l| l.len() == 1) => {
                    out.extend(keys.values().iter().map(|&k| lists[k as usize][0]));
                }
                _ => return None,
            }
            Some(())
        };
        single(cols.user, &mut self.user)?;
        single(cols.account, &mut self.account)?;
        let lists = |c: usize, ids: &mut Vec<u32>, offsets: &mut Vec<u32>, required: bool| -> Option<()> {
            if let Column::Ids(single) = &columns[c] {
                ids.extend_from_slice(single);
                offsets.extend((1..=n).map(|i| (ids.len() - n + i) as u32));
                return Some(());
            }
            let Column::Names(keys, lists) = &columns[c] else { return None };
            for i in 0..n {
                match keys.is_valid(i).then(|| &lists[keys.value(i) as usize]) {
                    Some(l) if !l.is_empty() => ids.extend_from_slice(l),
                    _ if required => return None,
                    _ => {}
                }
                offsets.push(ids.len() as u32);
            }
            Some(())
        };
        lists(cols.partition, &mut self.part_ids, &mut self.part_offsets, true)?;
        lists(cols.qos, &mut self.qos_ids, &mut self.qos_offsets, false)?;
        self.submit_time.extend_from_slice(required(cols.submit)?);
        // Slurm's accrue time 0 means "not yet eligible".
        let Column::Int(accrue) = &columns[cols.accrue] else { return None };
        self.accrue_time.extend(accrue.iter().map(|t| t.filter(|&t| t != 0)));
        self.min_nodes.extend(in_range(&columns[cols.min_nodes], 1, U32)?.map(|v| v as u32));
        self.cpus.extend(in_range(&columns[cols.cpus], 0, U32)?.map(|v| v as u32));
        self.time_limit.extend(in_range(&columns[cols.time_limit], NO_VAL.into(), U32)?.map(|v| v as u32));
        self.nice.extend(in_range(&columns[cols.nice], 0, NICE_RANGE)?.map(|v| v as i32));
        self.site_factor.extend(in_range(&columns[cols.site_factor], 0, NICE_RANGE)?.map(|v| v as i32));
        match cols.urgency {
            Some(c) => self.urgency.extend(in_range(&columns[c], DEFAULT_URGENCY.into(), 0..=31)?.map(|v| v as u8)),
            None => self.urgency.resize(self.urgency.len() + n, DEFAULT_URGENCY),
        }
        let Column::Tres(keys, counts) = &columns[cols.tres_req] else { return None };
        let counts: Vec<&[u64]> = counts.iter().map(|c| c.as_deref().ok()).collect::<Option<_>>()?;
        for (t, col) in self.tres_req.iter_mut().enumerate() {
            // A null request asks for nothing.
            col.extend((0..n).map(|i| if keys.is_valid(i) { counts[keys.value(i) as usize][t] } else { 0 }));
        }
        self.line.extend(rows_before + 1..=rows_before + n as u64);
        Some(())
    }

    /// Drops every job from `jobs` on.
    fn truncate(&mut self, jobs: usize) {
        self.part_ids.truncate(self.part_offsets[jobs] as usize);
        self.part_offsets.truncate(jobs + 1);
        self.qos_ids.truncate(self.qos_offsets[jobs] as usize);
        self.qos_offsets.truncate(jobs + 1);
        self.job_id.truncate(jobs);
        self.user.truncate(jobs);
        self.account.truncate(jobs);
        self.submit_time.truncate(jobs);
        self.accrue_time.truncate(jobs);
        self.min_nodes.truncate(jobs);
        self.cpus.truncate(jobs);
        self.time_limit.truncate(jobs);
        self.nice.truncate(jobs);
        self.site_factor.truncate(jobs);
        self.urgency.truncate(jobs);
        for col in &mut self.tres_req {
            col.truncate(jobs);
        }
        self.line.truncate(jobs);
    }

    /// Appends `chunk`, read from a later part of the same file, mapping its name ids to ours.
    fn append(&mut self, chunk: PendingJobs) {
        let ids = self.names.absorb(&chunk.names);
        fn map<'a>(ids: &'a [u32], v: &'a [u32]) -> impl Iterator<Item = u32> + 'a {
            v.iter().map(|&i| ids[i as usize])
        }
        self.job_id.extend_from_slice(&chunk.job_id);
        self.user.extend(map(&ids, &chunk.user));
        self.account.extend(map(&ids, &chunk.account));
        let (parts, qos) = (self.part_ids.len() as u32, self.qos_ids.len() as u32);
        self.part_ids.extend(map(&ids, &chunk.part_ids));
        self.part_offsets.extend(chunk.part_offsets[1..].iter().map(|o| o + parts));
        self.qos_ids.extend(map(&ids, &chunk.qos_ids));
        self.qos_offsets.extend(chunk.qos_offsets[1..].iter().map(|o| o + qos));
        self.submit_time.extend_from_slice(&chunk.submit_time);
        self.accrue_time.extend_from_slice(&chunk.accrue_time);
        self.min_nodes.extend_from_slice(&chunk.min_nodes);
        self.cpus.extend_from_slice(&chunk.cpus);
        self.time_limit.extend_from_slice(&chunk.time_limit);
        self.nice.extend_from_slice(&chunk.nice);
        self.site_factor.extend_from_slice(&chunk.site_factor);
        self.urgency.extend_from_slice(&chunk.urgency);
        for (col, part) in self.tres_req.iter_mut().zip(&chunk.tres_req) {
            col.extend_from_slice(part);
        }
        self.line.extend_from_slice(&chunk.line);
    }

    fn reserve(&mut self, n: usize) {
        self.job_id.reserve(n);
        self.user.reserve(n);
        self.account.reserve(n);
        self.part_offsets.reserve(n);
        self.part_ids.reserve(n);
        self.qos_offsets.reserve(n);
        self.submit_time.reserve(n);
        self.accrue_time.reserve(n);
        self.min_nodes.reserve(n);
        self.cpus.reserve(n);
        self.time_limit.reserve(n);
        self.nice.reserve(n);
        self.site_factor.reserve(n);
        self.urgency.reserve(n);
        self.line.reserve(n);
        for c in &mut self.tres_req {
            c.reserve(n);
        }
    }
}

/// A Parquet queue read a row group at a time, for commands that handle each job on its own and
/// need not hold the whole queue (`score`).
///
/// # Example
/// ```no_run
/// use fairshare_engine::jobs::ParquetRowGroups;
/// let mut groups = ParquetRowGroups::open("pending.parquet".as_ref(), &[])?;
/// while let Some(jobs) = groups.next_group() {
///     println!("{} jobs", jobs?.len());
/// }
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub struct ParquetRowGroups {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
    first_row: Vec<u64>,
    tres: Vec<Tres>,
    /// The names of the tree the jobs will be scored against.
    tree: Option<Arc<TreeNames>>,
    next: usize,
}

impl ParquetRowGroups {
    /// Reads the footer of `path`; the jobs will keep the counts of the TRES in `keep`.
    ///
    /// # Errors
    /// An unreadable file or one that is not Parquet.
    pub fn open(path: &Path, keep: &[Tres]) -> Result<Self> {
        guarded(path, || {
            // Each row group's pages are checked by the thread that reads it ([`Self::reader`]):
            // all the headers first held up every queue's start (0.1-0.2 s at 10^7 jobs).
            let plain = open_unchecked(path, ArrowReaderOptions::new())?;
            // Partitions, QOS and TRES requests are few: read as dictionaries, each distinct value
            // is interned or read once instead of once per job. Users and accounts may be too many
            // for a dictionary page (then stored plain, and a dictionary would be rebuilt by hashing
            // every row): read as string views and interned row by row.
            let fields: Vec<arrow::datatypes::FieldRef> = plain
                .schema()
                .fields()
                .iter()
                .map(|f| {
                    let hint = match f.name().as_str() {
                        "user" | "account" => DataType::Utf8View,
                        "partition" | "qos" | "tres_req" => {
                            DataType::Dictionary(Box::new(DataType::Int32), Box::new(f.data_type().clone()))
                        }
                        _ => return f.clone(),
                    };
                    if matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
                        Arc::new(f.as_ref().clone().with_data_type(hint))
                    } else {
                        f.clone()
                    }
                })
                .collect();
            // The footer is read once; only the Arrow schema is re-derived with the hint.
            let options = ArrowReaderOptions::new().with_schema(Arc::new(arrow::datatypes::Schema::new(fields)));
            let metadata =
                ArrowReaderMetadata::try_new(plain.metadata().clone(), options).map_err(|e| Error::format(path, e))?;
            let first_row = first_rows(&metadata);
            Ok(ParquetRowGroups {
                path: path.to_path_buf(),
                metadata,
                first_row,
                tres: keep.to_vec(),
                tree: None,
                next: 0,
            })
        })
    }

    /// The jobs will be read against `names`, the names of the tree they will be scored
    /// against, as [`PendingJobs::read_with`] reads them.
    #[must_use]
    pub fn with_names(self, names: Arc<TreeNames>) -> Self {
        ParquetRowGroups { tree: Some(names), ..self }
    }

    /// Jobs in the file.
    pub fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The next row group's jobs, read on the calling thread; `None` past the last.
    ///
    /// # Errors
    /// A missing column or a bad value, naming the row.
    pub fn next_group(&mut self) -> Option<Result<PendingJobs>> {
        let g = self.take_next()?;
        Some(guarded(&self.path, || self.read_group(g)))
    }

    /// The next row group's index, counted as taken; `None` past the last.
    fn take_next(&mut self) -> Option<usize> {
        let g = self.next;
        (g < self.metadata.metadata().num_row_groups()).then(|| {
            self.next += 1;
            g
        })
    }

    /// The next wave's row groups (one per thread), decoded across the threads, one queue each
    /// in file order.
    fn next_wave(&mut self) -> Option<Vec<Result<PendingJobs>>> {
        let groups = self.metadata.metadata().row_groups();
        if self.next >= groups.len() {
            return None;
        }
        let wave = self.next..(self.next + rayon::current_num_threads().max(1)).min(groups.len());
        self.next = wave.end;
        Some(wave.into_par_iter().map(|g| guarded(&self.path, || self.read_group(g))).collect())
    }

    /// The next row group's record batches, decoded on the calling thread but not yet read into
    /// jobs, which needs no names: a queue's first row group is decoded while the tree's names
    /// are made, then read by [`ParquetRowGroups::jobs_of`]. `None` past the last.
    pub(crate) fn next_decoded(&mut self) -> Option<Result<DecodedGroup>> {
        let g = self.take_next()?;
        Some(guarded(&self.path, || {
            let mut decoded = DecodedGroup { g, batches: Vec::new(), failed: None };
            for batch in self.reader(g)? {
                match batch {
                    Ok(batch) => decoded.batches.push(batch),
                    Err(e) => {
                        decoded.failed = Some(e);
                        break;
                    }
                }
            }
            Ok(decoded)
        }))
    }

    /// The jobs of a row group [`ParquetRowGroups::next_decoded`] gave.
    ///
    /// # Errors
    /// As [`ParquetRowGroups::next_group`], in the same order: a batch that did not decode fails
    /// after the batches before it are read.
    pub(crate) fn jobs_of(&self, decoded: DecodedGroup) -> Result<PendingJobs> {
        let batches = decoded.batches.into_iter().map(Ok).chain(decoded.failed.map(Err));
        guarded(&self.path, || self.read_batches(decoded.g, batches))
    }

    fn read_group(&self, g: usize) -> Result<PendingJobs> {
        self.read_batches(g, self.reader(g)?)
    }

    /// The batches of row group `g`, every column, decoded as they are taken, its pages checked
    /// first.
    fn reader(&self, g: usize) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
        check_group(&self.path, self.metadata.metadata(), g)?;
        group_reader(&self.path, &self.metadata, g, GROUP_BATCH_ROWS, ProjectionMask::all())
    }

    /// The jobs of row group `g`, from its batches in order.
    fn read_batches(
        &self,
        g: usize,
        batches: impl IntoIterator<Item = std::result::Result<RecordBatch, arrow::error::ArrowError>>,
    ) -> Result<PendingJobs> {
        let path = &self.path;
        let mut chunk = PendingJobs {
            format: PendingFormat::Parquet,
            names: self.tree.as_ref().map(|t| t.interner()).unwrap_or_default(),
            ..PendingJobs::empty(path.clone(), self.tres.clone())
        };
        chunk.reserve(self.metadata.metadata().row_group(g).num_rows().max(0) as usize);
        let mut kept = KeptTres::new(&self.tres);
        let mut row = self.first_row[g];
        for batch in batches {
            chunk.push_batch(
                path,
                &batch.map_err(|e| Error::format(path, e))?,
                &mut row,
                &mut kept,
                self.tree.as_deref(),
            )?;
        }
        Ok(chunk)
    }
}

/// Rows per batch of a row group's reader.
const GROUP_BATCH_ROWS: usize = 1 << 20;

/// A row group's record batches, decoded ([`ParquetRowGroups::next_decoded`]).
pub(crate) struct DecodedGroup {
    g: usize,
    batches: Vec<RecordBatch>,
    /// The error of the batch after the last decoded one, if one failed.
    failed: Option<arrow::error::ArrowError>,
}

/// A Parquet column in the form the reader consumes it.
enum Column {
    Text(arrow::array::StringArray),
    Int(arrow::array::Int64Array),
    /// Dictionary keys and, per dictionary value, its interned names (a comma list may hold several).
    Names(arrow::array::Int32Array, Vec<Vec<u32>>),
    /// Names not yet interned.
    View(StringViewArray),
    /// One interned name per row.
    Ids(Vec<u32>),
    /// Dictionary keys and, per dictionary value, the kept TRES counts it requests.
    Tres(arrow::array::Int32Array, Vec<std::result::Result<Vec<u64>, String>>),
    /// A column the reader does not read.
    Unused,
}

impl Column {
    /// Column `name` of numbers: integers, timestamps (in seconds) and whole floats are numbers;
    /// text is kept for the row parse.
    ///
    /// # Errors
    /// Text that is not UTF-8, or a column of a type that holds neither numbers nor text.
    fn from_array(a: &ArrayRef, name: &str) -> std::result::Result<Self, Bad> {
        let a = &numbers(a, name)?;
        let arrow_err = |e| Bad::arrow(name, e);
        Ok(match a.data_type() {
            DataType::Timestamp(..) => {
                let secs =
                    cast(a, &DataType::Timestamp(arrow::datatypes::TimeUnit::Second, None)).map_err(arrow_err)?;
                let secs = cast(&secs, &DataType::Int64).map_err(arrow_err)?;
                Column::Int(secs.as_primitive::<arrow::datatypes::Int64Type>().clone())
            }
            // Unsigned values beyond i64 go as text, so the row check names the value and the
            // range, as it does for a CSV (a plain cast would make them nulls: defaults).
            t if t.is_integer() => match cast_with_options(a, &DataType::Int64, &STRICT) {
                Ok(ints) => Column::Int(ints.as_primitive::<arrow::datatypes::Int64Type>().clone()),
                Err(_) => Column::Text(strings(a, name)?),
            },
            // Whole floats are integers with gaps as pandas stores them. With a fraction among
            // them the column goes as text, whole values written as integers, so the row check
            // names the fraction.
            t if t.is_floating() => {
                let f = cast(a, &DataType::Float64).map_err(arrow_err)?;
                let f = f.as_primitive::<arrow::datatypes::Float64Type>();
                match whole_numbers(f) {
                    Ok(ints) => Column::Int(ints),
                    Err(_) => Column::Text(
                        f.iter()
                            .map(|v| v.map(|v| if v.fract() == 0.0 { format!("{v:.0}") } else { v.to_string() }))
                            .collect(),
                    ),
                }
            }
            t if holds_text(t) => Column::Text(strings(a, name)?),
            t => return Err(Bad::column_type(name, t, "a number or text")),
        })
    }

    /// Column `name` of names: a dictionary's values are each interned once, so rows carry ids
    /// without hashing; plain text is kept for the row path.
    ///
    /// # Errors
    /// As [`text`].
    fn names(a: &ArrayRef, name: &str, names: &mut Interner) -> std::result::Result<Self, Bad> {
        Ok(match text(a, name)? {
            Text::Plain(values) => Column::Text(values),
            // Interned with the other name columns once all are read (`intern_views`).
            Text::View(views) => Column::View(views),
            Text::Dict(keys, values) => {
                let lists = (0..values.len())
                    .map(|v| {
                        let mut ids = Vec::new();
                        if values.is_valid(v) {
                            Names::Text(values.value(v)).push_ids(names, &mut ids);
                        }
                        ids
                    })
                    .collect();
                Column::Names(keys, lists)
            }
        })
    }

    /// Column `name` of `tres_req`: each value of a dictionary is read once; plain text is kept
    /// for the row path.
    ///
    /// # Errors
    /// As [`text`].
    fn tres(a: &ArrayRef, name: &str, kept: &[Tres], names: &[String]) -> std::result::Result<Self, Bad> {
        Ok(match text(a, name)? {
            Text::Plain(values) => Column::Text(values),
            Text::View(_) => Column::Text(strings(a, name)?),
            Text::Dict(keys, values) => {
                let counts = (0..values.len())
                    .map(|v| {
                        let mut out = vec![0; kept.len()];
                        let text = if values.is_valid(v) { values.value(v).trim() } else { "" };
                        read_kept_counts(text, kept, names, &mut out).map(|()| out)
                    })
                    .collect();
                Column::Tres(keys, counts)
            }
        })
    }

    fn cell(&self, i: usize) -> Cell<'_> {
        match self {
            Column::Tres(keys, counts) if keys.is_valid(i) => Cell::Tres(&counts[keys.value(i) as usize]),
            Column::Text(a) if a.is_valid(i) => Cell::Text(a.value(i)),
            Column::Int(a) if a.is_valid(i) => Cell::Int(a.value(i)),
            Column::Names(keys, lists) if keys.is_valid(i) => Cell::Ids(&lists[keys.value(i) as usize]),
            Column::Ids(ids) => Cell::Ids(std::slice::from_ref(&ids[i])),
            Column::View(a) if a.is_valid(i) => Cell::Text(a.value(i)),
            _ => Cell::Null,
        }
    }
}

/// True when every row holds one name as the row path would read it: not null, not empty, no
/// comma, no surrounding space.
fn single_names(views: &StringViewArray) -> bool {
    // Printable ASCII at both ends cannot be trimmed: only other names take `trim`.
    let trimmed = |v: &str| match (v.as_bytes().first(), v.as_bytes().last()) {
        (Some(a), Some(z)) if (0x21..0x7f).contains(a) && (0x21..0x7f).contains(z) => true,
        _ => !v.is_empty() && v.trim().len() == v.len(),
    };
    views.null_count() == 0
        && views.iter().flatten().all(|v| trimmed(v) && memchr::memchr(b',', v.as_bytes()).is_none())
}

/// The values of an integer column, `default` for nulls; `None` when the column is not integers or
/// a value is outside `range`.
fn in_range(
    col: &Column,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Option<impl Iterator<Item = i64> + '_> {
    let Column::Int(a) = col else { return None };
    let values = a.values();
    let fits = match a.nulls() {
        None => values.iter().all(|v| range.contains(v)),
        Some(nulls) => values.iter().zip(nulls.iter()).all(|(v, valid)| !valid || range.contains(v)),
    };
    fits.then(|| a.iter().map(move |v| v.unwrap_or(default)))
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float64Array, Int32Array, Int64Array, StringArray, UInt64Array};

    use super::*;
    use crate::config::Tres;

    /// `batch` written as Parquet in row groups of `rows` rows, in a directory kept while it lives.
    fn write(batch: &RecordBatch, rows: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.parquet");
        let props =
            parquet::file::properties::WriterProperties::builder().set_max_row_group_row_count(Some(rows)).build();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
        (dir, path)
    }

    fn keep() -> [Tres; 2] {
        [Tres::CPU, Tres::gres("gpu")]
    }

    /// Three jobs in typed columns; `time_limit` and `cpus` as given.
    fn queue(time_limit: ArrayRef, cpus: ArrayRef) -> RecordBatch {
        let text = |v: [&str; 3]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
        RecordBatch::try_from_iter([
            ("job_id", Arc::new(UInt64Array::from(vec![7, 8, 9])) as ArrayRef),
            ("user", text(["alice", "bob", "alice"])),
            ("account", text(["lab", "lab", "dept"])),
            ("partition", text(["batch,gpu", "batch", "batch"])),
            ("qos", Arc::new(StringArray::from(vec![Some("high"), None, Some("")])) as ArrayRef),
            ("submit_time", Arc::new(Int64Array::from(vec![100, 200, 300])) as ArrayRef),
            ("accrue_time", Arc::new(Int64Array::from(vec![Some(150), Some(0), None])) as ArrayRef),
            ("min_nodes", Arc::new(Int32Array::from(vec![Some(2), None, Some(1)])) as ArrayRef),
            ("cpus", cpus),
            ("time_limit", time_limit),
            ("nice", Arc::new(Int64Array::from(vec![-5, 0, 3])) as ArrayRef),
            ("site_factor", Arc::new(Int64Array::from(vec![10, 0, 0])) as ArrayRef),
            ("tres_req", text(["cpu=16,gres/gpu=2", "cpu=1", ""])),
            ("urgency", Arc::new(Int64Array::from(vec![Some(20), None, Some(0)])) as ArrayRef),
        ])
        .unwrap()
    }

    fn cpus() -> ArrayRef {
        Arc::new(Float64Array::from(vec![16.0, 1.0, 0.0]))
    }

    #[test]
    fn typed_columns_and_text_columns_read_alike() {
        let minutes: ArrayRef = Arc::new(Int64Array::from(vec![Some(1440), None, Some(30)]));
        // Text sends every batch down the row path, which parses Slurm's time syntax.
        let slurm: ArrayRef = Arc::new(StringArray::from(vec![Some("1-00:00:00"), Some("UNLIMITED"), Some("30")]));
        for time_limit in [minutes, slurm] {
            let (_dir, path) = write(&queue(time_limit, cpus()), 2);
            let jobs = PendingJobs::read(&path, None, &keep()).unwrap();
            let names = |ids: &[u32]| ids.iter().map(|&i| jobs.names.name(i)).collect::<Vec<_>>().join("+");
            assert_eq!(jobs.format, PendingFormat::Parquet);
            assert_eq!(jobs.job_id, [7, 8, 9]);
            assert_eq!((names(&jobs.user), names(&jobs.account)), ("alice+bob+alice".into(), "lab+lab+dept".into()));
            let parts: Vec<String> = (0..3).map(|j| names(jobs.partitions(j))).collect();
            let qos: Vec<String> = (0..3).map(|j| names(jobs.qos(j))).collect();
            assert_eq!(
                (parts, qos),
                (
                    vec!["batch+gpu".into(), "batch".into(), "batch".into()],
                    vec!["high".into(), String::new(), String::new()]
                )
            );
            assert_eq!(jobs.submit_time, [100, 200, 300]);
            assert_eq!(jobs.accrue_time, [Some(150), None, None]);
            assert_eq!((jobs.min_nodes.as_slice(), jobs.cpus.as_slice()), (&[2, 1, 1][..], &[16, 1, 0][..]));
            assert_eq!(jobs.time_limit, [1440, NO_VAL, 30]);
            assert_eq!((jobs.nice.as_slice(), jobs.site_factor.as_slice()), (&[-5, 0, 3][..], &[10, 0, 0][..]));
            assert_eq!(jobs.urgency, [20, DEFAULT_URGENCY, 0]);
            assert_eq!(jobs.tres_req, [vec![16, 1, 0], vec![2, 0, 0]]);
            assert_eq!(jobs.line, [1, 2, 3]);
            assert!(jobs.error_at(2, "bad").to_string().ends_with("queue.parquet:3: row 3: bad"));
        }
    }

    #[test]
    fn row_groups_come_one_by_one_in_file_order() {
        let (_dir, path) = write(&queue(Arc::new(Int64Array::from(vec![1, 2, 3])), cpus()), 1);
        let mut groups = ParquetRowGroups::open(&path, &keep()).unwrap();
        assert_eq!(groups.rows(), 3);
        let mut seen = Vec::new();
        while let Some(jobs) = groups.next_group() {
            let jobs = jobs.unwrap();
            // One row per row group.
            assert_eq!(jobs.len(), 1);
            seen.push((jobs.job_id[0], jobs.names.name(jobs.user[0]).to_string(), jobs.line[0], jobs.time_limit[0]));
        }
        let want = [(7, "alice", 1, 1), (8, "bob", 2, 2), (9, "alice", 3, 3)];
        assert_eq!(seen, want.map(|(id, user, line, limit)| (id, user.to_string(), line, limit)));
    }

    /// A row group decoded first and read into jobs later gives what reading it at once gives:
    /// the same jobs, or the same error.
    #[test]
    fn a_decoded_row_group_reads_as_one_read_at_once() {
        let limits = || Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef;
        let fraction = Arc::new(Float64Array::from(vec![16.0, 2.5, 1.0])) as ArrayRef;
        for cpus in [cpus(), fraction] {
            let (_dir, path) = write(&queue(limits(), cpus), 2);
            let mut at_once = ParquetRowGroups::open(&path, &keep()).unwrap();
            let mut decoded = ParquetRowGroups::open(&path, &keep()).unwrap();
            let shown = |r: Result<PendingJobs>| {
                r.map(|j| (j.job_id.clone(), j.line.clone(), j.cpus.clone())).map_err(|e| e.to_string())
            };
            let mut groups = 0;
            while let Some(jobs) = at_once.next_group() {
                let d = decoded.next_decoded().expect("as many row groups");
                assert_eq!(shown(d.and_then(|d| decoded.jobs_of(d))), shown(jobs));
                groups += 1;
            }
            assert!(groups == 2 && decoded.next_decoded().is_none());
        }
    }

    #[test]
    fn errors_name_the_first_bad_row() {
        let limits = || Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef;
        let read = |batch: RecordBatch| {
            let (_dir, path) = write(&batch, 2);
            PendingJobs::read(&path, Some(PendingFormat::Parquet), &keep()).unwrap_err().to_string()
        };
        // The fraction is in the second row group: rows count from the start of the file.
        let e = read(queue(limits(), Arc::new(Float64Array::from(vec![16.0, 1.0, 2.5]))));
        assert!(e.ends_with("queue.parquet:3: row 3: cpus \"2.5\" is not an integer"), "{e}");
        let batch = queue(limits(), cpus());
        let mut columns = batch.columns().to_vec();
        columns[batch.schema().index_of("nice").unwrap()] = Arc::new(Int64Array::from(vec![0, 3_000_000_000, 0]));
        let e = read(RecordBatch::try_new(batch.schema(), columns).unwrap());
        assert!(e.ends_with("queue.parquet:2: row 2: nice 3000000000 is not in -2147483645..=2147483645"), "{e}");
        let tres_req = batch.schema().index_of("tres_req").unwrap();
        let e = read(batch.project(&(0..batch.num_columns()).filter(|&c| c != tres_req).collect::<Vec<_>>()).unwrap());
        assert!(e.contains("queue.parquet: missing column \"tres_req\": the header must have job_id,"), "{e}");
    }
}
