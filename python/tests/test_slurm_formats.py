"""Slurm's own output formats as their consumers read them: `sshare --yaml` is the same response
as `sshare --json`, read by PyYAML."""

import json

import pytest
import yaml

from helpers import SEED, cli


@pytest.mark.parametrize("flags", [[], ["-A", "huttenhower_lab"], ["--site", str(SEED / "site.toml"), "-U"]])
def test_sshare_yaml_is_the_json_response(flags):
    as_json = cli("sshare", "--json", *flags)
    as_yaml = cli("sshare", "--yaml", *flags)
    assert as_json.returncode == 0 and as_yaml.returncode == 0, as_json.stderr + as_yaml.stderr
    assert as_yaml.stdout.startswith("---\n")
    from_json, from_yaml = json.loads(as_json.stdout), yaml.safe_load(as_yaml.stdout)
    assert from_yaml["meta"]["command"][1] == "--yaml"
    from_yaml["meta"]["command"] = from_json["meta"]["command"]
    assert from_yaml == from_json
    assert from_json["shares"]["shares"], "associations"


def test_sshare_yaml_with_no_association_selected():
    done = cli("sshare", "--yaml", "-A", "no-such-account")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["shares"]["shares"] == []
