//! Tree readers (assoc CSV, flux CSV, sshare dump, sacctmgr dump), then the tree build, the three
//! algorithms and sshare's text: any input either errs or computes, never panics or hangs.
#![no_main]

use std::path::Path;

use fairshare_engine::pass::{Algorithm, Params, compute};
use fairshare_engine::io::{assoc_csv, flux_csv, sacctmgr_dump, sshare_dump};
use fairshare_engine::output::sshare::{SshareOptions, write_sshare};
use fairshare_engine::tree::AssocTree;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let path = Path::new("fuzz");
    let input = match which % 4 {
        0 => assoc_csv::parse(path, text),
        1 => flux_csv::parse(path, text),
        2 => sshare_dump::parse(path, text),
        _ => sacctmgr_dump::parse(path, text),
    };
    let Ok(input) = input else { return };
    let Ok(tree) = AssocTree::build(input) else { return };
    for algorithm in [Algorithm::FairTree, Algorithm::Classic, Algorithm::Flux] {
        if let Ok(fs) = compute(&tree, &Params::new(algorithm)) {
            let mut out = Vec::new();
            let _ = write_sshare(&mut out, &tree, &fs, &SshareOptions { long: true, ..SshareOptions::default() });
        }
    }
});
