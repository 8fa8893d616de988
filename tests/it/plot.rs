//! `fairshare plot`: the icicle's rectangles are the users' blocks of ranks (checked against
//! sshare's factors), PNGs are PNGs of the requested size, history plots name bad associations.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of};

const SITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");

/// The seed site's tree, jobs and configuration at its `now`, under Fair Tree.
fn site_args() -> Vec<String> {
    let f = |n: &str| format!("{SITE}/{n}");
    [
        "--tree",
        &f("tree.csv"),
        "--jobs",
        &f("jobs.csv"),
        "--slurm-conf",
        &f("slurm.conf"),
        "--qos",
        &f("qos.txt"),
        "--now",
        "2026-01-08T00:00:00",
        "--algo",
        "fair-tree",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn icicle(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["plot".to_string(), "icicle".into()];
    args.extend(site_args());
    args.extend(["--out".to_string(), out.to_str().unwrap().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    fairshare(&args)
}

/// `sshare -a -P` rows as (account, user, factor); user is empty on account rows.
fn sshare_rows() -> Vec<(String, String, Option<f64>)> {
    let mut args = vec!["sshare".to_string()];
    args.extend(site_args());
    args.extend(["-a".to_string(), "-P".to_string()]);
    let text = stdout_of(&fairshare(&args));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('|').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (a, u, f) = (col("Account"), col("User"), col("FairShare"));
    lines
        .map(|l| {
            let v: Vec<&str> = l.split('|').collect();
            (v[a].trim().to_string(), v[u].to_string(), v[f].parse().ok())
        })
        .collect()
}

/// The value of attribute `name` in one SVG element's text.
fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    // At the start (the text after `<rect `) or after a space.
    let at = if element.starts_with(&key) { 0 } else { element.find(&format!(" {key}"))? + 1 };
    let start = at + key.len();
    Some(&element[start..start + element[start..].find('"')?])
}

/// The association rectangles: (data-name, x, width).
fn assoc_rects(svg: &str) -> Vec<(String, f64, f64)> {
    svg.split("<rect ")
        .skip(1)
        .map(|e| &e[..e.find('>').unwrap()])
        .filter(|e| attr(e, "class") == Some("assoc"))
        .map(|e| {
            let num = |n: &str| attr(e, n).unwrap().parse::<f64>().unwrap();
            (attr(e, "data-name").unwrap().to_string(), num("x"), num("width"))
        })
        .collect()
}

#[test]
fn icicle_rects_are_the_users_blocks_of_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tree.svg");
    stdout_of(&icicle(&out, &[]));
    let svg = std::fs::read_to_string(&out).unwrap();
    let root = &svg[..svg.find('>').unwrap()];
    let x0: f64 = attr(root, "data-plot-x0").unwrap().parse().unwrap();
    let x1: f64 = attr(root, "data-plot-x1").unwrap().parse().unwrap();
    let rects = assoc_rects(&svg);

    let rows = sshare_rows();
    let users: Vec<&(String, String, Option<f64>)> = rows.iter().filter(|r| !r.1.is_empty()).collect();
    let n = users.len() as f64;
    assert_eq!(attr(root, "data-users"), Some("19"));

    // Every association is drawn; one rectangle each, but for chem_shared: it has
    // FairShare=parent, so Fair Tree ranks its users (kim, lee) among chemistry's other children,
    // and chem_aspuru's block falls between them.
    let mut count: HashMap<String, usize> = HashMap::new();
    for (name, _, _) in &rects {
        *count.entry(name.clone()).or_default() += 1;
    }
    for (account, user, _) in &rows {
        let name = if user.is_empty() { account.clone() } else { format!("{account}/{user}") };
        let expected = if name == "chem_shared" { 2 } else { 1 };
        assert_eq!(count.remove(&name), Some(expected), "{name}");
    }
    assert!(count.is_empty(), "rectangles for no association: {count:?}");
    assert_eq!(rects.len(), rows.len() + 1);

    // An account spans the slabs [(r-1)/N, r/N] of its users' ranks r = N × factor: from its
    // best user's rank down by its user count (tied users sit side by side below their rank).
    let px = |frac: f64| x0 + frac * (x1 - x0);
    let span = |name: &str| {
        let r: Vec<&(String, f64, f64)> = rects.iter().filter(|r| r.0 == name).collect();
        assert_eq!(r.len(), 1, "{name}");
        (r[0].1, r[0].1 + r[0].2)
    };
    for account in ["econ_lab", "chem_jacobsen", "chemistry", "huttenhower_lab", "astro_lab"] {
        let ranks: Vec<f64> = users
            .iter()
            .filter(|u| u.0 == account || (account == "chemistry" && u.0.starts_with("chem")))
            .map(|u| (u.2.unwrap() * n).round())
            .collect();
        let best = ranks.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = ((best - ranks.len() as f64) / n, best / n);
        let (left, right) = span(account);
        // Whole-pixel edges and a 1-pixel seam between neighbours.
        assert!((left - px(lo)).abs() <= 0.51, "{account}: left {left} vs {}", px(lo));
        assert!((right + 1.0 - px(hi)).abs() <= 0.51, "{account}: right {right} vs {}", px(hi));
    }
    // Where no ranks are tied, that is exactly [(lowest - 1)/N, highest/N].
    for (account, lowest, highest) in [("econ_lab", "pat", "rae"), ("chem_jacobsen", "gus", "hana")] {
        let rank = |user: &str| (users.iter().find(|u| u.1 == user).unwrap().2.unwrap() * n).round();
        let (left, right) = span(account);
        assert!((left - px((rank(lowest) - 1.0) / n)).abs() <= 0.51, "{account}");
        assert!((right + 1.0 - px(rank(highest) / n)).abs() <= 0.51, "{account}");
    }
}

#[test]
fn icicle_png_has_the_requested_width_and_depth_limits_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tree.png");
    stdout_of(&icicle(&out, &["--width", "800"]));
    let png = std::fs::read(&out).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 800);
    assert!(u32::from_be_bytes(png[20..24].try_into().unwrap()) > 100);

    let shallow = dir.path().join("shallow.svg");
    stdout_of(&icicle(&shallow, &["--depth", "1"]));
    let names: Vec<String> =
        assoc_rects(&std::fs::read_to_string(&shallow).unwrap()).into_iter().map(|r| r.0).collect();
    assert_eq!(names.len(), 7, "{names:?}"); // the root and its six accounts
    assert!(names.contains(&"root".to_string()) && !names.iter().any(|n| n.contains('/')), "{names:?}");

    let bad = icicle(&dir.path().join("tree.jpg"), &[]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains(".svg or .png"));
}

/// A three-day daily history of the seed site.
fn history(dir: &Path) -> PathBuf {
    let out = dir.join("hist");
    let mut args = vec!["usage".to_string()];
    args.extend(site_args().into_iter().filter(|a| !a.starts_with("2026-01-08") && a != "--now"));
    args.extend(
        ["--every", "1d", "--from", "2026-01-05T00:00:00", "--to", "2026-01-08T00:00:00", "--out"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.push(out.to_str().unwrap().to_string());
    stdout_of(&fairshare(&args));
    out
}

#[test]
fn history_draws_named_series_and_names_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history(dir.path());
    let svg_path = dir.path().join("h.svg");
    let plot = |accounts: &str, out: &Path, extra: &[&str]| {
        let mut args = vec!["plot", "history", "--history", hist.to_str().unwrap(), "--accounts", accounts];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        fairshare(&args)
    };
    stdout_of(&plot("chemistry,gus@chem_jacobsen", &svg_path, &[]));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    // One line per series, one vertex per instant (4 days, both ends included).
    let lines: Vec<&str> = svg.split("<polyline ").skip(1).filter(|e| attr(e, "stroke-width") == Some("2")).collect();
    assert_eq!(lines.len(), 2, "{svg}");
    for l in &lines {
        assert_eq!(attr(l, "points").unwrap().split(' ').count(), 4, "{l}");
    }
    // The account's band of its users' factors, and both names in the legend.
    assert_eq!(svg.matches("<polygon ").count(), 1);
    assert!(svg.contains(">chemistry</text>") && svg.contains(">gus@chem_jacobsen</text>"), "{svg}");
    assert!(svg.contains(">2026-01-05</text>"), "{svg}");

    let png = dir.path().join("h.png");
    stdout_of(&plot("econ_lab", &png, &["--metric", "raw_usage", "--width", "640"]));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 640);

    let bad = plot("chemistry,no_such_lab", &dir.path().join("bad.svg"), &[]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("\"no_such_lab\""), "{err}");
    assert!(!dir.path().join("bad.svg").exists());
}
