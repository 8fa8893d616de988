//! A [`PartialUsage`] as an Arrow record batch, to ship between processes (a cluster's tasks):
//! one row per record of the tree input, the four limbs of its exact sum (and of its sum at the
//! last pass's start, and of each TRES's sum with its run seconds, when kept), the counts in the
//! schema's metadata under their names in run.json ([`ChargeReport::counts`]), and the TRES names.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};

use super::exact_sum::ExactSum;
use super::tres::TresSums;
use super::{ChargeReport, PartialUsage};
use crate::config::Tres;
use fairshare_base::{Error, Result};

impl PartialUsage {
    /// The part as a record batch: columns `sum_0`..`sum_3` (and `pass_start_0`..`_3`), least
    /// significant limb first; the counts and the first unmatched record in the metadata.
    pub fn to_batch(&self) -> RecordBatch {
        let limbs = |sums: &[ExactSum], name: &str| -> Vec<(Field, ArrayRef)> {
            (0..4)
                .map(|k| {
                    let values = UInt64Array::from_iter_values(sums.iter().map(|s| s.limbs()[k]));
                    (Field::new(format!("{name}_{k}"), DataType::UInt64, false), Arc::new(values) as ArrayRef)
                })
                .collect()
        };
        let mut columns = limbs(&self.sums, "sum");
        if let Some(p) = &self.pass_start {
            columns.extend(limbs(p, "pass_start"));
        }
        if let Some(t) = self.tres.as_ref().filter(|t| t.is_kept()) {
            let (usage, run_secs) = t.dense(self.sums.len());
            let k = t.names().len();
            for i in 0..k {
                let of_tres: Vec<ExactSum> = usage.iter().skip(i).step_by(k).copied().collect();
                columns.extend(limbs(&of_tres, &format!("tres_{i}")));
                let run = UInt64Array::from_iter_values(run_secs.iter().skip(i).step_by(k).copied());
                columns.push((
                    Field::new(format!("tres_run_secs_{i}"), DataType::UInt64, false),
                    Arc::new(run) as ArrayRef,
                ));
            }
        }
        let r = &self.report;
        let mut meta: HashMap<String, String> = r.counts().into_iter().map(|(k, v)| (k, v.to_string())).collect();
        if let Some((job, line)) = r.first_unmatched {
            meta.insert("first_unmatched".into(), format!("{job} {line}"));
        }
        if let Some(t) = &self.tres {
            meta.insert("tres".into(), t.names().iter().map(Tres::to_string).collect::<Vec<_>>().join(","));
            meta.insert("tres_kept".into(), t.is_kept().to_string());
        }
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
        RecordBatch::try_new(Arc::new(Schema::new_with_metadata(fields, meta)), arrays).expect("columns built to match")
    }

    /// The part [`PartialUsage::to_batch`] made; `source` names it in errors.
    ///
    /// # Errors
    /// A missing or mistyped column, or counts that do not read.
    pub fn from_batch(batch: &RecordBatch, source: &str) -> Result<PartialUsage> {
        let bad = |what: String| Error::input(source, None, format!("not a partial usage: {what}"));
        let limbs = |name: &str| -> Result<Option<Vec<ExactSum>>> {
            let columns: Vec<Option<&ArrayRef>> =
                (0..4).map(|k| batch.column_by_name(&format!("{name}_{k}"))).collect();
            if columns.iter().all(Option::is_none) {
                return Ok(None);
            }
            let columns = columns
                .into_iter()
                .enumerate()
                .map(|(k, c)| match c {
                    Some(c) if c.data_type() == &DataType::UInt64 && c.null_count() == 0 => {
                        Ok(c.as_primitive::<UInt64Type>())
                    }
                    _ => Err(bad(format!("column {name}_{k} missing or not non-null UInt64"))),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Some(
                (0..batch.num_rows())
                    .map(|i| ExactSum::from_limbs([0, 1, 2, 3].map(|k| columns[k].value(i))))
                    .collect(),
            ))
        };
        let meta = batch.schema().metadata().clone();
        let first_unmatched = match meta.get("first_unmatched") {
            None => None,
            Some(v) => {
                let parsed = v.split_once(' ').and_then(|(j, l)| Some((j.parse().ok()?, l.parse().ok()?)));
                Some(parsed.ok_or_else(|| bad(format!("first_unmatched {v:?}")))?)
            }
        };
        let sums = limbs("sum")?.ok_or_else(|| bad("no sum_0..sum_3 columns".into()))?;
        let tres = match meta.get("tres") {
            None => None,
            Some(list) => {
                let names = list
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(Tres::parse)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|m| bad(format!("tres: {m}")))?;
                let k = if meta.get("tres_kept").map(String::as_str) == Some("false") { 0 } else { names.len() };
                let (mut usage, mut run_secs) = (vec![ExactSum::default(); sums.len() * k], vec![0; sums.len() * k]);
                for i in 0..k {
                    let of_tres =
                        limbs(&format!("tres_{i}"))?.ok_or_else(|| bad(format!("no tres_{i}_0..3 columns")))?;
                    let run = match batch.column_by_name(&format!("tres_run_secs_{i}")) {
                        Some(c) if c.data_type() == &DataType::UInt64 && c.null_count() == 0 => {
                            c.as_primitive::<UInt64Type>()
                        }
                        _ => return Err(bad(format!("column tres_run_secs_{i} missing or not non-null UInt64"))),
                    };
                    for (r, s) in of_tres.into_iter().enumerate() {
                        usage[r * k + i] = s;
                        run_secs[r * k + i] = run.value(r);
                    }
                }
                Some(if k == 0 { TresSums::untracked(names) } else { TresSums::from_dense(names, &usage, &run_secs) })
            }
        };
        let pass_start = limbs("pass_start")?;
        let report = ChargeReport::from_counts(|k| meta.get(k).and_then(|v| v.parse().ok()))
            .map_err(|k| bad(format!("no count {k:?} in the metadata")))?;
        Ok(PartialUsage { sums, pass_start, tres, report: ChargeReport { first_unmatched, ..report } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::{Skip, Skipped};

    #[test]
    fn a_part_survives_its_batch() {
        let mut sums = vec![ExactSum::default(); 3];
        sums[1].add(1.5e20).unwrap();
        sums[2].add(3e-30).unwrap();
        let names = crate::config::tres::tracked_tres([]);
        let mut counts = vec![0; names.len()];
        counts[0] = 3;
        let mut tres = TresSums::new(names);
        tres.charge(2, 2.5, 60, &counts, 0).unwrap();
        let mut part = PartialUsage {
            sums: sums.clone(),
            pass_start: Some(sums),
            tres: Some(tres),
            report: ChargeReport {
                records: 12,
                charged: 7,
                skipped: Skipped::default(),
                started_at_submit: 2,
                first_unmatched: Some((42, 5)),
                pass_start: None,
            },
        };
        // Every reason its own count, so a mixed-up name shows.
        for (k, reason) in Skip::ALL.into_iter().enumerate() {
            part.report.skipped[reason] = k as u64 + 1;
        }
        part.report.records = part.report.charged + part.report.skipped.total();
        assert_eq!(PartialUsage::from_batch(&part.to_batch(), "t").unwrap(), part);
        let without = PartialUsage { pass_start: None, tres: None, ..part };
        assert_eq!(PartialUsage::from_batch(&without.to_batch(), "t").unwrap(), without);
    }

    #[test]
    fn a_batch_that_is_not_a_part_is_refused() {
        let batch = RecordBatch::try_from_iter([("x", Arc::new(UInt64Array::from(vec![1])) as ArrayRef)]).unwrap();
        let e = PartialUsage::from_batch(&batch, "<part>").unwrap_err();
        assert_eq!(e.to_string(), "<part>: not a partial usage: no sum_0..sum_3 columns");
    }
}
