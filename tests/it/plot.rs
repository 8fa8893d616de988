//! `fairshare plot`: the icicle's rectangles are the users' blocks of ranks (checked against
//! sshare's factors), PNGs are PNGs of the requested size, history plots name bad associations.
//! And what a newcomer expects (issue 16 C): a metric the history lacks is an error, shortened
//! labels stay distinct, narrow charts keep everything on the canvas, series are told apart by
//! colour and dash, coinciding series stay visible, infinite values are drawn and named. The
//! SVG is checked by its elements and attributes, not its bytes.

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
    elements(svg, "rect")
        .into_iter()
        .map(|(e, _)| e)
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
    history_of(dir, "fair-tree", &format!("{SITE}/jobs.csv"))
}

/// A three-day daily history of the seed site's tree under `algo`, charged from `jobs`.
fn history_of(dir: &Path, algo: &str, jobs: &str) -> PathBuf {
    let out = dir.join(format!("hist-{algo}"));
    let mut args = vec!["usage".to_string()];
    let mut site = site_args().into_iter().filter(|a| !a.starts_with("2026-01-08") && a != "--now").collect::<Vec<_>>();
    let at = |flag: &str, site: &Vec<String>| site.iter().position(|a| a == flag).unwrap() + 1;
    let (a, j) = (at("--algo", &site), at("--jobs", &site));
    (site[a], site[j]) = (algo.to_string(), jobs.to_string());
    args.extend(site);
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
    let lines: Vec<&str> = svg.split("<polyline ").skip(1).filter(|e| attr(e, "class") == Some("series")).collect();
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

/// `fairshare plot history` on `hist`.
fn plot_history(hist: &Path, accounts: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["plot", "history", "--history", hist.to_str().unwrap(), "--accounts", accounts];
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    fairshare(&args)
}

/// The text of an SVG document's elements named `tag`, up to their `>`, with what they hold
/// (the text up to the next `<`).
fn elements<'a>(svg: &'a str, tag: &str) -> Vec<(&'a str, &'a str)> {
    svg.split(&format!("<{tag} "))
        .skip(1)
        .map(|e| {
            let end = e.find('>').unwrap();
            let body = &e[end + 1..];
            (&e[..end], &body[..body.find('<').unwrap_or(body.len())])
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// The SVG's texts as (x, baseline, content).
fn texts(svg: &str) -> Vec<(f64, f64, String)> {
    elements(svg, "text")
        .into_iter()
        .map(|(e, body)| {
            let num = |n: &str| attr(e, n).unwrap().parse::<f64>().unwrap();
            (num("x"), num("y"), unescape(body))
        })
        .collect()
}

/// Everything drawn that reaches past the SVG's canvas: texts measured with the embedded font
/// the PNG uses (an SVG viewer's look-alike fonts are of about the same width), rectangles.
fn outside_canvas(svg: &str) -> Vec<String> {
    let root = &svg[..svg.find('>').unwrap()];
    let size = |n: &str| attr(root, n).unwrap().parse::<f64>().unwrap();
    let (w, h) = (size("width"), size("height"));
    let mut out = Vec::new();
    for (e, body) in elements(svg, "text") {
        let num = |n: &str| attr(e, n).unwrap().parse::<f64>().unwrap();
        let (x, y, em) = (num("x"), num("y"), num("font-size"));
        let text = unescape(body);
        let len = fairshare_pictures::plot::font::text_width(&text, em);
        let start = match attr(e, "text-anchor") {
            Some("middle") => -len / 2.0,
            Some("end") => -len,
            _ => 0.0,
        };
        // Turned a quarter anticlockwise: the text runs up from its anchor.
        let (x0, x1, y0, y1) = if attr(e, "transform").is_some() {
            (x - em, x + em * 0.25, y - start - len, y - start)
        } else {
            (x + start, x + start + len, y - em * 0.8, y + em * 0.25)
        };
        if x0 < 0.0 || x1 > w || y0 < 0.0 || y1 > h {
            out.push(format!("text {text:?} spans x {x0:.1}..{x1:.1}, y {y0:.1}..{y1:.1} of {w}x{h}"));
        }
    }
    for (e, _) in elements(svg, "rect").into_iter().skip(1) {
        let num = |n: &str| attr(e, n).unwrap().parse::<f64>().unwrap();
        let (x, y) = (num("x"), num("y"));
        if x < 0.0 || y < 0.0 || x + num("width") > w + 0.01 || y + num("height") > h + 0.01 {
            out.push(format!("rect {e} outside {w}x{h}"));
        }
    }
    out
}

#[test]
fn history_metric_the_algorithm_lacks_is_an_error_naming_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history_of(dir.path(), "classic", &format!("{SITE}/jobs.csv"));
    let out = dir.path().join("lfs.svg");
    let run = plot_history(&hist, "chemistry,gus", &out, &["--metric", "level_fs"]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "exit 0 for an empty chart: {err}");
    assert!(err.contains("level_fs") && err.contains("classic"), "{err}");
    for has in ["fs_factor", "raw_usage", "norm_usage", "effective_usage"] {
        assert!(err.contains(has), "{has}: {err}");
    }
    assert!(!out.exists());
    // The metrics it names draw.
    stdout_of(&plot_history(&hist, "chemistry,gus", &out, &["--metric", "raw_usage"]));
}

#[test]
fn icicle_shortened_labels_each_name_one_association_of_their_row() {
    let dir = tempfile::tempdir().unwrap();
    for width in [400, 500, 600, 700, 800, 900, 1000, 1200, 1600] {
        let out = dir.path().join(format!("tree{width}.svg"));
        stdout_of(&icicle(&out, &["--width", &width.to_string()]));
        let svg = std::fs::read_to_string(&out).unwrap();
        // (row top, left, right, the name its label shows: the user, or the account)
        let rects: Vec<(f64, f64, f64, String)> = elements(&svg, "rect")
            .into_iter()
            .filter(|(e, _)| attr(e, "class") == Some("assoc"))
            .map(|(e, _)| {
                let num = |n: &str| attr(e, n).unwrap().parse::<f64>().unwrap();
                let name = attr(e, "data-name").unwrap().rsplit('/').next().unwrap().to_string();
                (num("y"), num("x"), num("x") + num("width"), name)
            })
            .collect();
        let mut shortened = 0;
        for (x, y, text) in texts(&svg).into_iter().filter(|t| t.2.contains('…') && t.1 > 64.0) {
            let Some(own) = rects.iter().find(|r| r.1 <= x && x <= r.2 && r.0 <= y && y <= r.0 + 40.0) else {
                continue;
            };
            shortened += 1;
            // `head…tail` reads as any name of the row with that head and tail.
            let (head, tail) = text.split_once('…').unwrap();
            let mut readers: Vec<&str> = rects
                .iter()
                .filter(|r| r.0 == own.0 && r.3.starts_with(head) && r.3.ends_with(tail))
                .filter(|r| r.3.len() >= head.len() + tail.len())
                .map(|r| r.3.as_str())
                .collect();
            readers.sort_unstable();
            readers.dedup();
            assert_eq!(readers, vec![own.3.as_str()], "width {width}: {text:?} in {}'s rectangle", own.3);
        }
        assert!(shortened > 0 || width >= 1600, "width {width}: nothing shortened, nothing checked");
    }
}

#[test]
fn narrow_charts_keep_legends_and_labels_on_the_canvas() {
    let dir = tempfile::tempdir().unwrap();
    for (width, color) in [("320", "level-fs"), ("320", "factor"), ("360", "level-fs")] {
        let out = dir.path().join(format!("tree{width}{color}.svg"));
        stdout_of(&icicle(&out, &["--width", width, "--color", color]));
        let svg = std::fs::read_to_string(&out).unwrap();
        let bad = outside_canvas(&svg);
        assert!(bad.is_empty(), "icicle at {width} by {color}: {bad:#?}");
        // The key is all there: its title, the "no value" swatch's label and the scale's ends.
        let all: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
        let key = if color == "factor" { "the root; no factor" } else { "none: the root, FairShare=parent" };
        assert!(all.iter().any(|t| t == key), "{all:?}");
    }
    let hist = history(dir.path());
    let names = "chemistry,huttenhower_lab,test_lab,astro_lab,econ_lab,rc_staff,gus@chem_jacobsen,hana@chem_jacobsen,\
                 ivan,jun,kim,lee,mo,pat";
    for width in ["400", "520"] {
        let out = dir.path().join(format!("hist{width}.svg"));
        stdout_of(&plot_history(&hist, names, &out, &["--width", width]));
        let svg = std::fs::read_to_string(&out).unwrap();
        let bad = outside_canvas(&svg);
        assert!(bad.is_empty(), "history at {width}: {bad:#?}");
        let all: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
        for name in names.split(',') {
            assert!(all.iter().any(|t| t == name || t.starts_with(&format!("{name} ("))), "{name} at {width}: {all:?}");
        }
    }
}

#[test]
fn history_series_beyond_eight_differ_in_colour_or_dash() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history(dir.path());
    let users = "alice,bob,carol,dana,eli,fay,gus,hana,ivan,jun,kim,lee,mo,nia,omar,pat,quinn,rae,sam";
    let out = dir.path().join("all.svg");
    stdout_of(&plot_history(&hist, users, &out, &[]));
    let svg = std::fs::read_to_string(&out).unwrap();
    // Each series' style, from its lines on the plot and its sample in the legend.
    for class in ["series", "legend"] {
        let mut style: HashMap<String, (String, String)> = HashMap::new();
        for (e, _) in elements(&svg, "polyline").into_iter().filter(|(e, _)| attr(e, "class") == Some(class)) {
            let s =
                (attr(e, "stroke").unwrap().to_string(), attr(e, "stroke-dasharray").unwrap_or("solid").to_string());
            let name = attr(e, "data-series").unwrap().to_string();
            assert_eq!(style.entry(name.clone()).or_insert_with(|| s.clone()), &s, "{name}: two styles");
        }
        assert_eq!(style.len(), 19, "{class}: {style:?}");
        let mut seen: HashMap<&(String, String), &str> = HashMap::new();
        for (name, s) in &style {
            if let Some(other) = seen.insert(s, name) {
                panic!("{class}: {name} and {other} are both {s:?}");
            }
        }
    }
}

#[test]
fn history_coinciding_series_all_stay_visible_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history(dir.path());
    let out = dir.path().join("tied.svg");
    // dana, eli and fay share their account's parent shares: tied at every instant.
    stdout_of(&plot_history(&hist, "dana,eli,fay,gus", &out, &[]));
    let svg = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<(String, f64, String)> = elements(&svg, "polyline")
        .into_iter()
        .filter(|(e, _)| attr(e, "class") == Some("series"))
        .map(|(e, _)| {
            let name = attr(e, "data-series").unwrap().to_string();
            (name, attr(e, "stroke-width").unwrap().parse().unwrap(), attr(e, "points").unwrap().to_string())
        })
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(names, ["dana", "eli", "fay", "gus"]);
    assert!(lines[0].2 == lines[1].2 && lines[1].2 == lines[2].2, "the three are not tied: {lines:?}");
    // Painted in this order, each wider than the next: all three colours show.
    assert!(lines[0].1 > lines[1].1 && lines[1].1 > lines[2].1, "{lines:?}");
    let legend: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
    for entry in ["dana", "eli (= dana)", "fay (= dana)", "gus"] {
        assert!(legend.iter().any(|t| t == entry), "{entry}: {legend:?}");
    }
}

#[test]
fn history_infinite_values_are_drawn_on_a_marked_line_and_named() {
    let dir = tempfile::tempdir().unwrap();
    // Without lee's jobs, lee has no usage: Fair Tree's Level FS S/U is +∞ at every instant.
    let jobs = std::fs::read_to_string(format!("{SITE}/jobs.csv")).unwrap();
    let kept: String = jobs.lines().filter(|l| !l.contains(",lee,")).map(|l| format!("{l}\n")).collect();
    let jobs = super::write_file(dir.path(), "jobs.csv", &kept);
    let hist = history_of(dir.path(), "fair-tree", jobs.to_str().unwrap());
    let out = dir.path().join("inf.svg");
    let run = plot_history(&hist, "lee,hana", &out, &["--metric", "level_fs"]);
    stdout_of(&run);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("lee: level_fs +∞ at 4 of 4 instant(s)"), "{err}");
    let svg = std::fs::read_to_string(&out).unwrap();
    let root = &svg[..svg.find('>').unwrap()];
    let inf_y = attr(root, "data-inf-y").expect("a +∞ line").to_string();
    let lee: Vec<&str> = elements(&svg, "polyline")
        .into_iter()
        .filter(|(e, _)| attr(e, "data-series") == Some("lee") && attr(e, "class") == Some("series"))
        .map(|(e, _)| attr(e, "points").unwrap())
        .collect();
    assert_eq!(lee.len(), 1, "{svg}");
    let ys: Vec<&str> = lee[0].split(' ').map(|p| p.split(',').nth(1).unwrap()).collect();
    assert_eq!(ys, vec![inf_y.as_str(); 4]);
    let arrows = elements(&svg, "polygon").into_iter().filter(|(e, _)| attr(e, "class") == Some("clamp")).count();
    assert_eq!(arrows, 4);
    let all: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
    assert!(all.iter().any(|t| t == "+∞"), "{all:?}");
    assert!(all.iter().any(|t| t.starts_with("lee: level_fs +∞ at 4 of 4")), "{all:?}");
}
