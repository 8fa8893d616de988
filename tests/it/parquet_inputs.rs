//! Parquet inputs as analysts' tools write them (issue 16 B): the seed tree's CSV through DuckDB,
//! polars or pandas reads as the CSV does, and a value that does not convert is named, with what
//! was expected, instead of reading as a null or as another number.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, DictionaryArray, Float64Array, Int64Array, ListBuilder, RecordBatch, StringArray,
    StringBuilder, StringViewArray, UInt64Array,
};
use arrow::datatypes::{DataType, Int32Type};
use parquet::arrow::ArrowWriter;

use super::{fairshare, stdout_of};

const SITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");

/// The seed site's `now` (2026-01-08T00:00:00).
const NOW: &str = "1767830400";

fn site(name: &str) -> PathBuf {
    Path::new(SITE).join(name)
}

/// Writes `columns` as one Parquet file at `path`.
fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>) -> PathBuf {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_path_buf()
}

/// Runs the binary with `args`.
fn run(args: &[&dyn AsRef<OsStr>]) -> Output {
    fairshare(args.iter().map(|a| a.as_ref()))
}

/// The error a failed run printed (after any notes on defaults), without the program's prefix.
fn error_of(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected a failure; stderr: {stderr}");
    let error = stderr.lines().find_map(|l| l.strip_prefix("fairshare: error: "));
    error.unwrap_or_else(|| panic!("no error line in: {stderr}")).to_string()
}

/// `columns` with `column` replaced by `with`.
fn replaced<'a>(mut columns: Vec<(&'a str, ArrayRef)>, column: &str, with: &ArrayRef) -> Vec<(&'a str, ArrayRef)> {
    let slot = columns.iter_mut().find(|(n, _)| *n == column).expect("a column of the fixture");
    slot.1 = with.clone();
    columns
}

/// A column of lists of one name each (`["u"]`), as a tool that aggregated names writes it.
fn name_lists(names: &[&str]) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for n in names {
        b.values().append_value(n);
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Text whose last value is not UTF-8 (`\xff\xfe`): a byte-array column without a string type.
fn bytes_ending_badly(first: &[&str]) -> ArrayRef {
    let mut values: Vec<&[u8]> = first.iter().map(|s| s.as_bytes()).collect();
    values.push(b"\xff\xfe");
    Arc::new(BinaryArray::from(values))
}

// ---------------------------------------------------------------------------------------------
// The analyst's round trip of the seed tree.
// ---------------------------------------------------------------------------------------------

/// How a tool types a CSV column it reads: integers where every value is one, else text.
#[derive(Clone, Copy, Debug)]
enum Tool {
    /// `COPY (SELECT * FROM read_csv_auto(...)) TO ... (FORMAT parquet)`: BIGINT, VARCHAR.
    DuckDb,
    /// `pl.read_csv(...).write_parquet(...)`: Int64, String (string views).
    Polars,
    /// `pd.read_csv(...).to_parquet(...)`: integers with gaps become floats.
    Pandas,
}

/// The seed tree's CSV as `tool` writes it to Parquet.
fn seed_tree_as(tool: Tool) -> Vec<(String, ArrayRef)> {
    let text = std::fs::read_to_string(site("tree.csv")).unwrap();
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    header
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let cells: Vec<Option<&str>> = rows.iter().map(|r| Some(r[c]).filter(|v| !v.is_empty())).collect();
            let ints: Option<Vec<Option<i64>>> = cells.iter().map(|v| v.map(str::parse).transpose().ok()).collect();
            let column: ArrayRef = match (ints, tool) {
                (Some(ints), Tool::Pandas) if ints.contains(&None) => {
                    Arc::new(ints.iter().map(|v| v.map(|v| v as f64)).collect::<Float64Array>())
                }
                (Some(ints), _) => Arc::new(Int64Array::from(ints)),
                (None, Tool::Polars) => Arc::new(StringViewArray::from(cells)),
                (None, _) => Arc::new(StringArray::from(cells)),
            };
            (name.to_string(), column)
        })
        .collect()
}

#[test]
fn the_seed_tree_through_duckdb_polars_or_pandas_reads_as_its_csv() {
    let want = stdout_of(&run(&[&"sshare", &"--tree", &site("tree.csv")]));
    let dir = tempfile::tempdir().unwrap();
    for tool in [Tool::DuckDb, Tool::Polars, Tool::Pandas] {
        let columns = seed_tree_as(tool);
        let path = dir.path().join(format!("{tool:?}.parquet"));
        write_parquet(&path, columns.iter().map(|(n, a)| (n.as_str(), a.clone())).collect());
        let out = run(&[&"sshare", &"--tree", &path]);
        assert!(out.status.success(), "{tool:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout_of(&out), want, "{tool:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Values that do not convert, reader by reader: the value and what was expected.
// ---------------------------------------------------------------------------------------------

/// A three-row tree as DuckDB writes one (BIGINT ids and usage, text shares).
fn small_tree() -> Vec<(&'static str, ArrayRef)> {
    vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("parent_id", Arc::new(Int64Array::from(vec![None, Some(1), Some(2)]))),
        ("account", Arc::new(StringArray::from(vec!["root", "a", "a"]))),
        ("user", Arc::new(StringArray::from(vec![None, None, Some("u")]))),
        ("shares", Arc::new(StringArray::from(vec!["1", "1", "parent"]))),
        ("usage", Arc::new(Int64Array::from(vec![0, 0, 5]))),
    ]
}

const SHARES: &str = "expected a share count (0..=4294967294) or \"parent\"";

#[test]
fn tree_values_that_do_not_convert_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let at_row_3 = |what: &str| format!("row 3: {what}");
    let cases: Vec<(&str, ArrayRef, String)> = vec![
        ("shares", Arc::new(Int64Array::from(vec![1, 1, -1])), at_row_3(&format!("shares -1: {SHARES}"))),
        ("shares", Arc::new(StringArray::from(vec!["1", "1", "abc"])), at_row_3(&format!("shares \"abc\": {SHARES}"))),
        // A fraction is not truncated, and no float stands for a share count.
        ("shares", Arc::new(Float64Array::from(vec![1.0, 1.0, 1.5])), at_row_3(&format!("shares 1.5: {SHARES}"))),
        ("shares", Arc::new(Float64Array::from(vec![1.0, 1.0, f64::NAN])), at_row_3(&format!("shares NaN: {SHARES}"))),
        // The CSV reader's cap: Slurm keeps shares in 32 bits, u32::MAX reserved.
        (
            "shares",
            Arc::new(UInt64Array::from(vec![1, 1, 1 << 63])),
            at_row_3(&format!("shares 9223372036854775808: {SHARES}")),
        ),
        (
            "shares",
            Arc::new(StringArray::from(vec!["1", "1", "4294967295"])),
            at_row_3(&format!("shares \"4294967295\": {SHARES}")),
        ),
        ("id", Arc::new(StringArray::from(vec!["1", "2", "x"])), at_row_3("id \"x\": expected a non-negative integer")),
        (
            "parent_id",
            Arc::new(Int64Array::from(vec![None, Some(1), Some(-2)])),
            at_row_3("parent_id -2: expected a non-negative integer"),
        ),
        ("account", bytes_ending_badly(&["root", "a"]), at_row_3("account \"\\xff\\xfe\": expected UTF-8 text")),
        ("user", name_lists(&["", "", "u"]), "user is list<string>: expected text".into()),
        (
            "account",
            Arc::new(arrow::array::BooleanArray::from(vec![true; 3])),
            "account is boolean: expected text".into(),
        ),
    ];
    for (i, (column, values, message)) in cases.into_iter().enumerate() {
        let path = write_parquet(&dir.path().join(format!("tree{i}.parquet")), replaced(small_tree(), column, &values));
        let out = run(&[&"sshare", &"--tree", &path]);
        let at = if message.starts_with("row 3") { ":3" } else { "" };
        assert_eq!(error_of(&out), format!("{}{at}: {message}", path.display()), "{column}");
    }
}

/// Two job records of the seed site, typed as a canonical writer types them.
fn two_jobs() -> Vec<(&'static str, ArrayRef)> {
    vec![
        ("job_id", Arc::new(UInt64Array::from(vec![100_000, 100_001]))),
        ("user", Arc::new(StringArray::from(vec!["pat", "rae"]))),
        ("account", Arc::new(StringArray::from(vec!["econ_lab", "econ_lab"]))),
        ("partition", Arc::new(StringArray::from(vec!["serial_requeue", "ivybridge"]))),
        ("qos", Arc::new(StringArray::from(vec!["", ""]))),
        ("start", Arc::new(Int64Array::from(vec![1_767_200_107, 1_767_229_938]))),
        ("end", Arc::new(Int64Array::from(vec![1_767_209_047, 1_767_323_559]))),
        ("tres_alloc", Arc::new(StringArray::from(vec!["cpu=2,mem=8G,node=1", "cpu=8,mem=32G,node=1"]))),
    ]
}

/// `sshare` with usage recomputed from `jobs`.
fn sshare_with_jobs(jobs: &Path) -> Output {
    run(&[&"sshare", &"--tree", &site("tree.csv"), &"--jobs", &jobs, &"--now", &NOW])
}

#[test]
fn job_record_values_that_do_not_convert_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let id = "expected a non-negative integer";
    let cases: Vec<(&str, ArrayRef, String)> = vec![
        ("job_id", Arc::new(StringArray::from(vec!["100000", "x"])), format!("row 2: job_id \"x\": {id}")),
        ("job_id", Arc::new(Float64Array::from(vec![100_000.0, f64::NAN])), format!("row 2: job_id NaN: {id}")),
        ("job_id", Arc::new(Float64Array::from(vec![100_000.0, 1.5])), format!("row 2: job_id 1.5: {id}")),
        ("job_id", Arc::new(Int64Array::from(vec![100_000, -1])), format!("row 2: job_id -1: {id}")),
        ("account", bytes_ending_badly(&["econ_lab"]), "row 2: account \"\\xff\\xfe\": expected UTF-8 text".into()),
        ("user", name_lists(&["pat", "rae"]), "user is list<string>: expected text".into()),
    ];
    for (i, (column, values, message)) in cases.into_iter().enumerate() {
        let path = write_parquet(&dir.path().join(format!("jobs{i}.parquet")), replaced(two_jobs(), column, &values));
        let at = if message.starts_with("row 2") { ":2" } else { "" };
        assert_eq!(error_of(&sshare_with_jobs(&path)), format!("{}{at}: {message}", path.display()), "{column}");
    }
}

/// Parquet records are billed a batch at a time, once per (partition, TRES string) and QOS: a
/// partition slurm.conf lacks, or a QOS the dump lacks, is still named at the first record that is
/// billed with it, and a record that charges nothing (no association) is never billed. The
/// same records as plain strings and as dictionaries read alike.
#[test]
fn parquet_billing_errors_name_the_first_record_billed() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = |partitions: [&str; 3], qos: [&str; 3]| -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("job_id", Arc::new(UInt64Array::from(vec![100_000, 100_001, 100_002]))),
            ("user", Arc::new(StringArray::from(vec!["nobody", "pat", "rae"]))),
            ("account", Arc::new(StringArray::from(vec!["econ_lab", "econ_lab", "econ_lab"]))),
            ("partition", Arc::new(DictionaryArray::<Int32Type>::from_iter(partitions))),
            ("qos", Arc::new(DictionaryArray::<Int32Type>::from_iter(qos))),
            ("start", Arc::new(Int64Array::from(vec![1_767_200_107, 1_767_200_107, 1_767_229_938]))),
            ("end", Arc::new(Int64Array::from(vec![1_767_209_047, 1_767_209_047, 1_767_323_559]))),
            (
                "tres_alloc",
                Arc::new(StringArray::from(vec!["cpu=2,mem=8G,node=1", "cpu=2,mem=8G,node=1", "cpu=8,mem=32G,node=1"])),
            ),
        ]
    };
    let sshare = |name: &str, columns: Vec<(&str, ArrayRef)>| {
        let path = write_parquet(&dir.path().join(name), columns);
        let out = run(&[
            &"sshare",
            &"--tree",
            &site("tree.csv"),
            &"--slurm-conf",
            &site("slurm.conf"),
            &"--qos",
            &site("qos.txt"),
            &"--jobs",
            &path,
            &"--now",
            &NOW,
        ]);
        (path, out)
    };
    // Row 1 (no association) bills nothing: its unknown partition and QOS pass.
    let (path, out) = sshare("later.parquet", jobs(["nowhere", "nowhere", "ivybridge"], ["", "", ""]));
    assert_eq!(error_of(&out), format!("{}:2: partition \"nowhere\" is not defined in slurm.conf", path.display()));
    let (path, out) = sshare("qos.parquet", jobs(["nowhere", "ivybridge", "ivybridge"], ["gold", "", "gold"]));
    assert_eq!(error_of(&out), format!("{}:3: QOS \"gold\" is not in the QOS dump", path.display()));

    // Good records: the dictionaries read as the same strings do.
    let good = jobs(["ivybridge", "ivybridge", "abudhabi"], ["low", "", "high"]);
    let (_, dict) = sshare("dict.parquet", good.clone());
    let plain: Vec<(&str, ArrayRef)> = good
        .into_iter()
        .map(|(n, a)| match a.data_type() {
            DataType::Dictionary(..) => (n, arrow::compute::cast(&a, &DataType::Utf8).unwrap()),
            _ => (n, a),
        })
        .collect();
    let (_, strings) = sshare("plain.parquet", plain);
    assert_eq!(stdout_of(&dict), stdout_of(&strings));
}

/// A job id up to 2^64 - 1 reads as the CSV reader reads it, not as a null.
#[test]
fn job_record_ids_read_in_the_csv_readers_range() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("jobs.csv");
    std::fs::write(
        &csv,
        "job_id,user,account,partition,qos,start,end,tres_alloc\n\
         100000,pat,econ_lab,serial_requeue,,1767200107,1767209047,\"cpu=2,mem=8G,node=1\"\n\
         18446744073709551615,rae,econ_lab,ivybridge,,1767229938,1767323559,\"cpu=8,mem=32G,node=1\"\n",
    )
    .unwrap();
    let ids: ArrayRef = Arc::new(UInt64Array::from(vec![100_000, u64::MAX]));
    let parquet = write_parquet(&dir.path().join("jobs.parquet"), replaced(two_jobs(), "job_id", &ids));
    let want = stdout_of(&sshare_with_jobs(&csv));
    assert_eq!(stdout_of(&sshare_with_jobs(&parquet)), want);
}

/// Two pending jobs of the seed site.
fn two_pending() -> Vec<(&'static str, ArrayRef)> {
    let ints = |v: [i64; 2]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
    vec![
        ("job_id", Arc::new(UInt64Array::from(vec![200_000, 200_001]))),
        ("user", Arc::new(StringArray::from(vec!["pat", "dana"]))),
        ("account", Arc::new(StringArray::from(vec!["econ_lab", "huttenhower_lab"]))),
        ("partition", Arc::new(StringArray::from(vec!["skylake", "shared"]))),
        ("qos", Arc::new(StringArray::from(vec!["", ""]))),
        ("submit_time", ints([1_767_145_996, 1_767_093_697])),
        ("accrue_time", ints([1_767_146_179, 1_767_093_971])),
        ("min_nodes", ints([1, 1])),
        ("cpus", ints([32, 16])),
        ("time_limit", ints([60, 60])),
        ("nice", ints([0, 0])),
        ("site_factor", ints([0, 0])),
        ("tres_req", Arc::new(StringArray::from(vec!["cpu=32,mem=128G,node=1", "cpu=16,mem=64G,node=1"]))),
    ]
}

#[test]
fn queue_values_that_do_not_convert_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let huge: ArrayRef = Arc::new(UInt64Array::from(vec![1, u64::MAX]));
    let cases: Vec<(&str, ArrayRef, String)> = vec![
        ("job_id", huge.clone(), "row 2: job_id 18446744073709551615 is not in 0..=9223372036854775807".into()),
        // Not a null read as the default count 0.
        ("cpus", huge, "row 2: cpus 18446744073709551615 is not in 0..=4294967295".into()),
        ("account", bytes_ending_badly(&["econ_lab"]), "row 2: account \"\\xff\\xfe\": expected UTF-8 text".into()),
        ("user", name_lists(&["pat", "dana"]), "user is list<string>: expected text".into()),
    ];
    for (i, (column, values, message)) in cases.into_iter().enumerate() {
        let path =
            write_parquet(&dir.path().join(format!("pending{i}.parquet")), replaced(two_pending(), column, &values));
        let out = run(&[
            &"sprio",
            &"--tree",
            &site("tree.csv"),
            &"--slurm-conf",
            &site("slurm.conf"),
            &"--pending",
            &path,
            &"--now",
            &NOW,
        ]);
        let at = if message.starts_with("row 2") { ":2" } else { "" };
        assert_eq!(error_of(&out), format!("{}{at}: {message}", path.display()), "{column}");
    }
}
