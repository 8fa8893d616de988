//! slurm.conf, QOS dumps, TRES strings and weights, Slurm times, timestamps, hostlists and flux's
//! R: errors, never panics.
#![no_main]

use std::path::Path;

use fairshare_engine::config::tres::{parse_tres_counts, parse_tres_weights};
use fairshare_engine::config::{HostList, qos, slurm_conf, time::parse_time};
use fairshare_base::read::time::parse_timestamp;
use fairshare_engine::usage::flux::parse_r;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_r(data);
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz.conf");
    let _ = slurm_conf::parse(path, text);
    let _ = qos::parse(path, text);
    for line in text.lines().take(64) {
        let _ = parse_tres_counts(line);
        let _ = parse_tres_weights(line);
        let _ = parse_time(line);
        let _ = parse_timestamp(line);
        if let Ok(h) = HostList::parse(line) {
            let _ = h.len();
        }
    }
});
