"""`fairshare run --prometheus`'s textfile, read by the Prometheus client's own parser."""

import math

from prometheus_client.parser import text_string_to_metric_families

import fairshare

from helpers import SEED, cli


def test_the_textfile_parses_and_holds_the_runs_numbers(tmp_path):
    prom = tmp_path / "fairshare.prom"
    done = cli("run", "--site", str(SEED / "site.toml"), "--out-dir", str(tmp_path / "run"), "--prometheus", str(prom))
    assert done.returncode == 0, done.stderr
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert {"fairshare_factor", "fairshare_level", "fairshare_usage_raw", "fairshare_usage_effective",
            "fairshare_shares_normalized", "fairshare_run_stage_seconds"} <= families.keys()
    for family in families.values():
        assert family.type == "gauge", family.name
        assert family.documentation, family.name
        for sample in family.samples:
            assert sample.timestamp is None, sample
            assert not math.isnan(sample.value), sample
            assert sample.value != math.inf or family.name == "fairshare_level", sample

    run = fairshare.run(SEED / "site.toml")["associations"]
    users = run.filter(run["user"].is_not_null())
    factors = {(s.labels["account"], s.labels["user"], s.labels["partition"]): s.value
               for s in families["fairshare_factor"].samples}
    assert len(factors) == users.height
    for row in users.iter_rows(named=True):
        assert factors[(row["account"], row["user"], row["partition"] or "")] == row["fs_factor"], row
    raw = {(s.labels["account"], s.labels["user"], s.labels["partition"]): s.value
           for s in families["fairshare_usage_raw"].samples}
    assert len(raw) == run.height  # every association, the root included
    for row in run.iter_rows(named=True):
        assert raw[(row["account"], row["user"] or "", row["partition"] or "")] == row["raw_usage"], row
