#!/usr/bin/env python3
"""The web report in a real browser: headless Chromium, JavaScript on, opened from disk.

    python3 tests/python/check_report.py FAIRSHARE_BINARY [SCREENSHOT_DIR]

Makes the report of the embedded default site (`fairshare run --report DIR`, whose stdout is
sshare's long table), then, with every host name unresolvable (`--host-resolver-rules`) and the
network log on (`--log-net-log`):

- loads `index.html#q=dana` and checks the search listed dana's association (the page's script
  runs the search from the URL fragment), and that no console message or error was logged;
- loads dana's page and an account's page and checks that dana's FairShare is sshare's;
- checks that every URL the browser requested is a file inside the report directory;
- saves screenshots (index, dana's page, an account page, the index at phone width) as PNG into
  SCREENSHOT_DIR (default: `$FAIRSHARE_SCREENSHOTS`, else `$CARGO_TARGET_DIR/report-screenshots`).

Only the standard library. Exits non-zero with a message at the first failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "dana"


def chromium() -> str:
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    sys.exit("check_report.py: no Chromium found (install the `chromium` package, or set CHROMIUM)")


def fail(message: str) -> None:
    sys.exit(f"check_report.py: FAILED: {message}")


def browse(browser: str, url: str, work: Path, tag: str, extra: list[str]) -> tuple[str, str, Path]:
    """Runs headless Chromium on `url`; returns (stdout, stderr, net log path)."""
    netlog = work / f"{tag}.netlog.json"
    args = [
        browser,
        "--headless",
        "--no-sandbox",  # CI containers run as root
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        f"--user-data-dir={work / ('profile-' + tag)}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--log-net-log={netlog}",
        "--net-log-capture-mode=Everything",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        *extra,
        url,
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fail(f"chromium exited {done.returncode} on {url}: {done.stderr[-2000:]}")
    return done.stdout, done.stderr, netlog


def console_errors(stderr: str) -> list[str]:
    """Console messages and uncaught errors of the page (the report's script logs nothing)."""
    return [l for l in stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]


def page_requests(netlog: Path) -> list[str]:
    """The URLs of the requests the page made (the network log's request jobs started for a web
    origin; a file:// page's origin is opaque, `null`). The browser's own background requests
    (time, spelling dictionaries: "not an origin") are not the page's: they are left out."""
    text = netlog.read_text(errors="replace").rstrip().rstrip(",")
    if not text.endswith("}"):
        text += "]}"  # a log cut short by the browser's exit
    log = json.loads(text)
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log.get("events", []):
        params = event.get("params") or {}
        # A job's end carries no URL; its start names the URL and who asked for it.
        if event.get("type") == start and "url" in params and params.get("initiator") != "not an origin":
            urls.append(params["url"])
    return urls


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = Path(sys.argv[1])
    default_shots = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "report-screenshots"
    shots = Path(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("FAIRSHARE_SCREENSHOTS", default_shots))
    shots.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        site = work / "site"
        run = subprocess.run([str(binary), "run", "--report", str(site)], capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"fairshare run --report: {run.stderr}")
        # sshare's long table: the user's FairShare.
        lines = run.stdout.splitlines()
        col = lines[0].split().index("FairShare")
        rows = [l.split() for l in lines[2:]]
        user_rows = [r for r in rows if len(r) > 1 and r[1] == USER]
        if not user_rows:
            fail(f"{USER} is not in sshare's table")
        account, expected = user_rows[0][0], user_rows[0][col]
        name = f"{account}/{USER}"
        base = site.resolve().as_uri()

        # The index with the search run from the fragment.
        dom, err, netlog = browse(browser, f"{base}/index.html#q={USER}", work, "index", ["--dump-dom"])
        results = re.search(r'<ul id="results"[^>]*>(.*?)</ul>', dom, re.S)
        if not results:
            fail("the index has no result list")
        links = re.findall(r'<a href="([^"]+)">([^<]*)</a>', results.group(1))
        hit = [href for href, text in links if text == name]
        if not hit:
            fail(f"the search for {USER!r} did not list {name}: {results.group(1)[:500]}")
        user_page = hit[0]
        logs = [(f"index", console_errors(err), netlog)]

        dom, err, netlog = browse(browser, f"{base}/{user_page}", work, "user", ["--dump-dom"])
        shown = re.search(r'id="fairshare">([^<]*)<', dom)
        if not shown or shown.group(1) != expected:
            fail(f"{name}'s page shows FairShare {shown and shown.group(1)!r}; sshare prints {expected!r}")
        logs.append(("user", console_errors(err), netlog))
        account_page = re.search(r'<nav aria-label="Breadcrumb"><p><a href="index.html">Report</a> › <a href="([^"]+)">', dom)
        if not account_page:
            fail(f"{name}'s page links no account")
        dom, err, netlog = browse(browser, f"{base}/{account_page.group(1)}", work, "account", ["--dump-dom"])
        if "<h1>" not in dom:
            fail("the account page did not load")
        logs.append(("account", console_errors(err), netlog))

        for tag, url, size in [
            ("index", f"{base}/index.html#q={USER}", "1200,1500"),
            ("user", f"{base}/{user_page}", "1200,1800"),
            ("account", f"{base}/{account_page.group(1)}", "1200,1500"),
            ("index-phone", f"{base}/index.html#q={USER}", "390,1400"),
        ]:
            out = shots / f"report-{tag}.png"
            _, err, netlog = browse(browser, url, work, f"shot-{tag}", [f"--screenshot={out}", f"--window-size={size}"])
            if not out.is_file() or out.stat().st_size == 0:
                fail(f"no screenshot {out}")
            logs.append((f"shot-{tag}", console_errors(err), netlog))

        for tag, errors, netlog in logs:
            if errors:
                fail(f"console messages on {tag}: {errors}")
            if not netlog.is_file():
                fail(f"no network log for {tag}")
            for url in page_requests(netlog):
                if not url.startswith(base + "/"):
                    fail(f"{tag}: a request left the report directory: {url}")

        # The check above can fail: a page that loads an image from elsewhere is caught.
        leaky = work / "leaky.html"
        leaky.write_text('<!DOCTYPE html><p>x</p><img src="http://example.invalid/x.png" alt="">')
        _, _, netlog = browse(browser, leaky.as_uri(), work, "leaky", ["--dump-dom"])
        if not any("example.invalid" in u for u in page_requests(netlog)):
            fail("the network log check does not see a page's request to another host")
        # And the console check sees a script error.
        broken = work / "broken.html"
        broken.write_text("<!DOCTYPE html><script>no_such_function()</script>")
        _, err, _ = browse(browser, broken.as_uri(), work, "broken", ["--dump-dom"])
        if not console_errors(err):
            fail("the console check does not see an uncaught error")
        print(f"check_report.py: the report works in {Path(browser).name}: search, {name} FairShare {expected}, "
              f"no console error, no request outside {site}; screenshots in {shots}")


if __name__ == "__main__":
    main()
