//! `fairshare run --report` and `fairshare report --run`: a static site whose every link is
//! relative and resolves, that loads nothing from elsewhere, shows sshare's numbers, and never
//! replaces what is not an earlier report.

use std::path::Path;

use super::{fairshare, stdout_of};

/// Every `.html` page of a report, (name, text).
fn pages(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".html"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// The value of every `href=` and `src=` attribute (quoted or not) of a page.
fn urls(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = page.to_ascii_lowercase();
    for attr in ["href=", "src="] {
        let mut at = 0;
        while let Some(k) = lower[at..].find(attr) {
            let start = at + k + attr.len();
            let rest = &page[start..];
            let value = match rest.chars().next() {
                Some(q @ ('"' | '\'')) => &rest[1..1 + rest[1..].find(q).unwrap()],
                _ => &rest[..rest.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(rest.len())],
            };
            out.push(value.to_string());
            at = start;
        }
    }
    out
}

/// Every link of every page is relative, names no scheme or host, and resolves to a file of the
/// report; the style sheet loads nothing either. Returns the pages.
fn check_site(dir: &Path) -> Vec<(String, String)> {
    let all = pages(dir);
    assert!(all.iter().any(|(n, _)| n == "index.html"));
    for (name, page) in &all {
        for url in urls(page) {
            let lower = url.to_ascii_lowercase();
            assert!(
                !lower.starts_with("http:") && !lower.starts_with("https:") && !lower.starts_with("//"),
                "{name}: {url}"
            );
            assert!(!url.contains(':') && !url.starts_with('/') && !url.contains(".."), "{name}: {url}");
            let file = url.split('#').next().unwrap();
            assert!(file.is_empty() || dir.join(file).is_file(), "{name}: {url} does not resolve");
        }
        // Only our own script, and the inline search index.
        for tag in page.match_indices("<script").map(|(k, _)| &page[k..k + page[k..].find('>').unwrap()]) {
            assert!(tag == "<script src=\"report.js\"" || tag.contains("application/json"), "{name}: {tag}");
        }
    }
    let css = std::fs::read_to_string(dir.join("style.css")).unwrap();
    assert!(!css.contains("url(") && !css.contains("@import"));
    all
}

/// sshare's FairShare of every user row, keyed `account/user` (the long table's columns).
fn sshare_factors(text: &str) -> Vec<(String, String)> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let col = header.iter().position(|h| *h == "FairShare").unwrap();
    lines
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // User rows have a user column: account, user, shares, ... (accounts have no FairShare).
            (f.len() > col).then(|| (format!("{}/{}", f[0], f[1]), f[col].to_string()))
        })
        .collect()
}

/// The page of `name` (`account/user`) by the index's search data, and its FairShare.
fn fairshare_on_page(dir: &Path, name: &str) -> String {
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let json = &index[index.find("id=\"search-index\">").unwrap() + 18..];
    let entries: Vec<(String, String, String)> =
        serde_json::from_str(&json[..json.find("</script>").unwrap()]).unwrap();
    let page = &entries.iter().find(|e| e.0 == name).unwrap_or_else(|| panic!("{name} not in the index")).2;
    let text = std::fs::read_to_string(dir.join(page)).unwrap();
    let start = text.find("id=\"fairshare\">").unwrap() + 15;
    text[start..start + text[start..].find('<').unwrap()].to_string()
}

#[test]
fn run_report_on_the_default_site_is_a_closed_site_with_sshares_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let out = fairshare(["run", "--report", site.to_str().unwrap()]);
    let sshare = stdout_of(&out);
    let all = check_site(&site);
    let users = sshare_factors(&sshare);
    assert!(users.len() > 5, "{sshare}");
    // Every association but the root has a page.
    let rows = sshare.lines().count() - 2;
    assert_eq!(all.len(), rows, "{:?}", all.iter().map(|p| &p.0).collect::<Vec<_>>());
    for (name, factor) in &users {
        assert_eq!(&fairshare_on_page(&site, name), factor, "{name}");
    }
    let index = &all.iter().find(|p| p.0 == "index.html").unwrap().1;
    assert!(index.contains("<svg role=\"img\"") && index.contains("id=\"q\""));
    // With the run, the queue and every user's forecast are there.
    let user_pages: Vec<&String> = all.iter().filter(|p| p.1.contains("id=\"fairshare\"")).map(|p| &p.1).collect();
    assert!(user_pages.iter().all(|p| p.contains("id=\"recovery\"") && p.contains("fairshare forecast ")));
    assert!(user_pages.iter().any(|p| p.contains("PriorityWeight") || p.contains(" × ")));
    // A second run replaces the first report.
    stdout_of(&fairshare(["run", "--report", site.to_str().unwrap()]));
    check_site(&site);
    // With a run directory, whose jobs.parquet then gives the queue, the pages are the same.
    let (with_dir, run_dir) = (tmp.path().join("with-dir"), tmp.path().join("run"));
    stdout_of(&fairshare(["run", "--report", with_dir.to_str().unwrap(), "--out-dir", run_dir.to_str().unwrap()]));
    assert_eq!(check_site(&with_dir), all);
}

#[test]
fn report_from_a_run_directory_leaves_out_the_forecast_and_shows_the_runs_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, prev, site) = (tmp.path().join("run"), tmp.path().join("prev"), tmp.path().join("site"));
    stdout_of(&fairshare(["run", "--out-dir", run.to_str().unwrap()]));
    // An earlier run with another half-life: factors move.
    stdout_of(&fairshare(["run", "--half-life", "1-0", "--out-dir", prev.to_str().unwrap()]));
    let out = fairshare([
        "report",
        "--run",
        run.to_str().unwrap(),
        "--previous",
        prev.to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all = check_site(&site);
    let sshare = std::fs::read_to_string(run.join("sshare.txt")).unwrap();
    for (name, factor) in sshare_factors(&sshare) {
        assert_eq!(fairshare_on_page(&site, &name), factor, "{name}");
    }
    let index = &all.iter().find(|p| p.0 == "index.html").unwrap().1;
    assert!(index.contains("factors changed since"), "the movers table");
    let user = all.iter().find(|p| p.1.contains("id=\"fairshare\"")).unwrap();
    assert!(user.1.contains("no forecast:") && user.1.contains("holds no job records"), "{}", user.0);
    assert!(user.1.contains("<th scope=\"col\">Priority</th>") || user.1.contains("No pending jobs"));
}

#[test]
fn a_users_directory_or_file_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep").unwrap();
    let file = tmp.path().join("file.html");
    std::fs::write(&file, "keep").unwrap();
    let run = tmp.path().join("run");
    stdout_of(&fairshare(["run", "--out-dir", run.to_str().unwrap()]));
    for target in [&mine, &file] {
        for args in [
            vec!["run", "--report", target.to_str().unwrap()],
            vec!["report", "--run", run.to_str().unwrap(), "--out", target.to_str().unwrap()],
        ] {
            let out = fairshare(&args);
            assert!(!out.status.success(), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("refusing"), "{args:?}: {err}");
        }
    }
    assert_eq!(std::fs::read_to_string(mine.join("notes.txt")).unwrap(), "keep");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    // A run directory is not a report either.
    let out = fairshare(["report", "--run", run.to_str().unwrap(), "--out", run.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a fairshare run directory"));
    // Report parts without a report.
    let out = fairshare(["run", "--previous", run.to_str().unwrap()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--report DIR"));
}
