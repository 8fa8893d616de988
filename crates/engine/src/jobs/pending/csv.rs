//! The CSV queue: a header naming the canonical columns (in any order, extra columns allowed),
//! then a job a line; blank lines are skipped and errors name the line.

use std::borrow::Cow;
use std::io::BufReader;
use std::path::Path;

use super::columns::{Cell, Columns};
use super::queue::{KeptTres, PendingJobs};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::fields::{recycle, split_fields};
use fairshare_base::read::source;

impl PendingJobs {
    /// Reads the jobs of the CSV queue `path`.
    ///
    /// # Errors
    /// An unreadable file, a header without a canonical column, a line of another width or a bad
    /// value, naming the line.
    pub(super) fn read_csv(&mut self, path: &Path) -> Result<()> {
        let mut kept = KeptTres::new(&self.tres);
        let mut reader = BufReader::with_capacity(1 << 20, source::open(path)?);
        let mut line = String::new();
        let mut buffer: Vec<Cow<'static, str>> = Vec::new();
        let mut line_no = 0u64;
        let mut header: Option<Columns> = None;
        loop {
            let n = source::read_line(&mut reader, &mut line, path, line_no + 1)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let text = line.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let err = |m: &str| Error::input(path, line_no, m.to_string());
            let mut fields = recycle(std::mem::take(&mut buffer));
            split_fields(text, &mut fields).map_err(err)?;
            let Some(cols) = &header else {
                let names: Vec<String> =
                    fields.iter().map(|f| f.trim().trim_start_matches('\u{feff}').to_string()).collect();
                header = Some(Columns::resolve(&names).map_err(|m| err(&m))?);
                continue;
            };
            if fields.len() != cols.width {
                return Err(err(&format!("expected {} fields, found {}", cols.width, fields.len())));
            }
            let raw = cols.raw(|i| Cell::Text(&fields[i])).map_err(|m| err(&m))?;
            self.push(raw, line_no, &mut kept)?;
            buffer = recycle(fields);
        }
        if header.is_none() {
            return Err(Error::input(path, None, "empty file: expected a header starting with job_id"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tres;
    use crate::jobs::pending::queue::{NO_VAL, PendingFormat};

    const HEADER: &str =
        "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req";

    /// The queue `text` read as CSV, keeping the cpu and gpu counts; the error as its message.
    fn read(text: &str) -> std::result::Result<PendingJobs, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.csv");
        std::fs::write(&path, text).unwrap();
        PendingJobs::read(&path, Some(PendingFormat::Csv), &[Tres::CPU, Tres::gres("gpu")]).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_every_column_in_any_order_with_defaults_for_empty_cells() {
        let jobs = read(
            "\u{feff}user,job_id,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,\
             site_factor,tres_req,comment\n\
             alice,7,lab,\"batch,gpu\",high,2026-01-08T00:00:00,0,2,16,1-00:00:00,-5,10,\"cpu=16,gres/gpu=2\",x\n\
             \n\
             bob,8.0,lab,batch,,100,150.0,,,UNLIMITED,,,cpu=1,\n",
        )
        .unwrap();
        let names = |ids: &[u32]| ids.iter().map(|&i| jobs.names.name(i)).collect::<Vec<_>>().join("+");
        assert_eq!(jobs.format, PendingFormat::Csv);
        assert_eq!(jobs.job_id, [7, 8]);
        assert_eq!((names(&jobs.user), names(&jobs.account)), ("alice+bob".into(), "lab+lab".into()));
        assert_eq!((names(jobs.partitions(0)), names(jobs.partitions(1))), ("batch+gpu".into(), "batch".into()));
        assert_eq!((names(jobs.qos(0)), names(jobs.qos(1))), ("high".into(), String::new()));
        assert_eq!(jobs.submit_time, [1_767_830_400, 100]);
        assert_eq!(jobs.accrue_time, [None, Some(150)]);
        assert_eq!((jobs.min_nodes.as_slice(), jobs.cpus.as_slice()), (&[2, 1][..], &[16, 0][..]));
        assert_eq!(jobs.time_limit, [1440, NO_VAL]);
        assert_eq!((jobs.nice.as_slice(), jobs.site_factor.as_slice()), (&[-5, 0][..], &[10, 0][..]));
        assert_eq!(jobs.urgency, [16, 16]);
        assert_eq!(jobs.tres_req, [vec![16, 1], vec![2, 0]]);
        // The blank line still counts.
        assert_eq!(jobs.line, [2, 4]);
        assert!(jobs.location(1).ends_with("queue.csv:4"), "{}", jobs.location(1));
    }

    #[test]
    fn errors_name_the_line_and_the_value() {
        let row = |cells: &str| read(&format!("{HEADER}\n{cells}\n")).unwrap_err();
        let e = read("").unwrap_err();
        assert!(e.ends_with("queue.csv: empty file: expected a header starting with job_id"), "{e}");
        let e = read("job_id,user\n").unwrap_err();
        assert!(e.contains("queue.csv:1: missing column \"account\": the header must have job_id,user,"), "{e}");
        let e = row("1,u,a,p");
        assert!(e.ends_with("queue.csv:2: expected 13 fields, found 4"), "{e}");
        let e = row("1,u,a,\"p,0,0,1,1,,0,0,");
        assert!(e.ends_with("queue.csv:2: unterminated quoted field"), "{e}");
        let e = row("1,u,a,p,,yesterday,0,1,1,,0,0,");
        assert!(e.contains("queue.csv:2: submit_time: time \"yesterday\" is neither epoch seconds nor "), "{e}");
        let e = row(",u,a,p,,100,0,1,1,,0,0,");
        assert!(e.ends_with("queue.csv:2: job_id is empty"), "{e}");
        let e = row("1,u,a,p,,100,0,1,two,,0,0,");
        assert!(e.ends_with("queue.csv:2: cpus \"two\" is not an integer"), "{e}");
        let e = row("1,u,a,p,,100,0,1,1,,2147483646,0,");
        assert!(e.ends_with("queue.csv:2: nice 2147483646 is not in -2147483645..=2147483645"), "{e}");
        let e = row("1,,a,p,,100,0,1,1,,0,0,");
        assert!(e.ends_with("queue.csv:2: user, account and partition must not be empty"), "{e}");
        let e = row("1,u,a,p,,100,0,1,1,,0,0,cpu");
        assert!(e.ends_with("queue.csv:2: tres_req: TRES count \"cpu\" is not type=count"), "{e}");
    }
}
