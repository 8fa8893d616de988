#!/usr/bin/env python3
"""Cross-checks a run directory written by `fairshare run --out-dir DIR`.

    python3 tests/python/check_run.py DIR

1. `associations.parquet` and `jobs.parquet` read the same in pyarrow, polars and DuckDB: same
   columns, same rows in the same order, same values (floats bit for bit).
2. `sshare.txt` (`sshare -a -l`, fixed width) prints the numbers of `associations.parquet`: rows
   are matched by (indented account, user) in order; each double must print as C's `%f` (or `%e`
   when too wide, as sshare does) of the Parquet value, integers exactly, blank <-> null.
3. `sprio.txt` (sprio's default format) prints the numbers of `jobs.parquet`: rows in job-id
   order, each cell exactly as sprio formats the Parquet value (`%.0f` for weighted factors).

Prints a short summary and exits 0, or names every mismatch (up to a limit) and exits 1.
Needs only the standard library, pyarrow, polars and duckdb.
"""

from __future__ import annotations

import math
import re
import struct
import sys
from pathlib import Path

try:
    import duckdb
    import polars as pl
    import pyarrow
    import pyarrow.parquet as pq
except ImportError as e:  # pragma: no cover - environment problem, not a check failure
    sys.exit(f"check_run: missing Python package ({e}); install pyarrow, polars and duckdb")

MAX_REPORTED = 20

# Doubles sshare prints blank: Slurm's NO_VAL, INFINITE, and NO_VAL64/INFINITE64 (2^64 as doubles).
SSHARE_BLANK = (4_294_967_294.0, 4_294_967_295.0, float(2**64))


class Checker:
    """Collects mismatches so one run reports all of them, up to MAX_REPORTED."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.count = 0

    def fail(self, message: str) -> None:
        self.count += 1
        if len(self.errors) < MAX_REPORTED:
            self.errors.append(message)


# --- 1. The three readers ---------------------------------------------------------------------


def read_pyarrow(path: Path) -> tuple[list[str], dict[str, list]]:
    table = pq.read_table(path)
    return table.column_names, {c: table.column(c).to_pylist() for c in table.column_names}


def read_polars(path: Path) -> tuple[list[str], dict[str, list]]:
    df = pl.read_parquet(path)
    return df.columns, {c: df.get_column(c).to_list() for c in df.columns}


def read_duckdb(path: Path) -> tuple[list[str], dict[str, list]]:
    quoted = str(path).replace("'", "''")
    rel = duckdb.sql(f"select * from '{quoted}'")
    rows = rel.fetchall()
    return rel.columns, {c: [row[i] for row in rows] for i, c in enumerate(rel.columns)}


def same_value(a: object, b: object) -> bool:
    """Exact equality: same Python type, floats compared bit for bit (so -0.0 != 0.0)."""
    if a is None or b is None:
        return a is None and b is None
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


def check_readers(ck: Checker, path: Path) -> tuple[list[str], dict[str, list]]:
    """Reads `path` with all three libraries; returns pyarrow's view after comparing the others."""
    readers = [("pyarrow", read_pyarrow), ("polars", read_polars), ("duckdb", read_duckdb)]
    views = []
    for name, read in readers:
        try:
            views.append((name, *read(path)))
        except Exception as e:  # noqa: BLE001 - any reader failure is a finding
            ck.fail(f"{path.name}: {name} cannot read it: {type(e).__name__}: {e}")
    if not views:
        return [], {}
    ref_name, ref_cols, ref_data = views[0]
    nrows = len(ref_data[ref_cols[0]]) if ref_cols else 0
    for name, cols, data in views[1:]:
        if cols != ref_cols:
            ck.fail(f"{path.name}: {name} sees columns {cols}, {ref_name} sees {ref_cols}")
            continue
        for c in cols:
            if len(data[c]) != nrows:
                ck.fail(f"{path.name}: {name} sees {len(data[c])} rows in {c!r}, {ref_name} {nrows}")
                continue
            for r, (a, b) in enumerate(zip(ref_data[c], data[c])):
                if not same_value(a, b):
                    ck.fail(f"{path.name}: row {r} column {c!r}: {ref_name} {a!r} but {name} {b!r}")
    return ref_cols, ref_data


# --- Fixed-width text as the C tools print it --------------------------------------------------


def c_fixed(v: float) -> str:
    """C's `%f`."""
    return "%.6f" % v


def sshare_double(v: float | None, width: int) -> str:
    """`print_fields_double`: blank for unset values and Slurm's sentinels, `%f`, or `%e` trimmed
    to the field when `%f` is too wide."""
    if v is None or math.isnan(v) or v in SSHARE_BLANK:
        return ""
    fixed = c_fixed(v)
    if len(fixed) <= width or math.isinf(v):
        return fixed
    trial = "%.*e" % (width, v)
    prec = max(0, width - (len(trial) - width)) if len(trial) > width else width
    return "%.*e" % (prec, v)


def sshare_text(s: str | None, width: int) -> str:
    """`print_fields_str`: strings longer than the field end in `+`."""
    if s is None:
        return ""
    return s[: width - 1] + "+" if len(s) > width else s


def spans_from_dashes(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def cut_cells(line: str, spans: list[tuple[int, int]]) -> list[str] | None:
    """The cells of a fixed-width line, or None when a value overflowed into its neighbour."""
    padded = line.ljust(spans[-1][1] + 1)
    if any(padded[e] != " " for _, e in spans[:-1]) or any(s > 0 and padded[s - 1] != " " for s, _ in spans):
        return None
    return [padded[s:e] for s, e in spans]


# --- 2. sshare.txt against associations.parquet ------------------------------------------------


def check_sshare(ck: Checker, path: Path, data: dict[str, list]) -> tuple[int, int]:
    lines = path.read_text().splitlines()
    if len(lines) < 2 or not set(lines[1].strip()) <= {"-", " "}:
        ck.fail(f"{path.name}: no header and dashes row (expected `sshare -a -l` fixed-width text)")
        return 0, 0
    spans = spans_from_dashes(lines[1])
    names = [lines[0].ljust(spans[-1][1])[s:e].strip() for s, e in spans]
    widths = {n: e - s for n, (s, e) in zip(names, spans)}
    for needed in ("Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage", "FairShare"):
        if needed not in widths:
            ck.fail(f"{path.name}: no {needed} column in the header {names}")
            return 0, 0

    n = len(data["id"])
    aw, uw = widths["Account"], widths["User"]
    # (indented account, user) as sshare prints them -> Parquet rows in file order.
    by_key: dict[tuple[str, str], list[int]] = {}
    for r in range(n):
        key = (sshare_text(" " * data["depth"][r] + data["account"][r], aw), sshare_text(data["user"][r], uw))
        by_key.setdefault(key, []).append(r)

    def expected(col: str, r: int) -> str | None:
        w = widths[col]
        is_root = data["parent_id"][r] is None
        if col == "RawShares":
            if is_root:
                return ""
            if data["parent_shares"][r]:
                return "parent"
            return sshare_text(str(data["raw_shares"][r]), w)
        if col == "RawUsage":
            u = data["raw_usage"][r]
            whole = 0 if u is None or math.isnan(u) else min(max(math.trunc(u), 0), 2**64 - 1)
            return sshare_text(str(whole), w)
        if col == "NormShares":
            return sshare_double(data["norm_shares"][r], w)
        if col == "NormUsage":
            return sshare_double(data["norm_usage"][r], w)
        if col == "EffectvUsage":
            return sshare_double(data["effective_usage"][r], w)
        if col == "FairShare":
            return "" if data["user"][r] is None else sshare_double(data["fs_factor"][r], w)
        if col == "LevelFS":
            return "" if data["parent_shares"][r] else sshare_double(data["level_fs"][r], w)
        if col == "Partition":
            return sshare_text(data["partition"][r], w)
        if col == "ID":
            return str(data["id"][r])
        if col == "GrpTRESMins":
            return sshare_text(data["grp_tres_mins"][r], w)
        if col == "TRESRunMins" and "tres_run_secs" in data:
            # Every TRES of the cluster, its remaining running seconds in whole minutes.
            secs = data["tres_run_secs"][r]
            return sshare_text(",".join(f"{name}={v // 60}" for name, v in secs.items()), w)
        return None  # Cluster, and TRESRunMins without per-TRES usage: not in the Parquet file

    seen = 0
    compared = 0
    for lineno, line in enumerate(lines[2:], start=3):
        cells = cut_cells(line, spans)
        if cells is None:
            ck.fail(f"{path.name}:{lineno}: a value overflows its column: {line!r}")
            continue
        row = dict(zip(names, cells))
        key = (row["Account"].rstrip(), row["User"].strip())
        rows = by_key.get(key)
        if not rows:
            ck.fail(f"{path.name}:{lineno}: no (further) association ({key[0].strip()!r}, {key[1]!r}) in Parquet")
            continue
        r = rows.pop(0)
        seen += 1
        for col in names:
            if col in ("Account", "User"):
                continue
            want = expected(col, r)
            if want is None:
                continue
            compared += 1
            got = row[col].strip()
            # Fields sshare blanks by the row's kind (an account's FairShare, a `parent` row's
            # LevelFS) are null in Parquet too.
            pq_null = {
                "FairShare": ("fs_factor", data["user"][r] is None),
                "LevelFS": ("level_fs", data["parent_shares"][r]),
            }
            if col in pq_null and pq_null[col][1] and data[pq_null[col][0]][r] is not None:
                ck.fail(
                    f"{path.name}:{lineno} ({key[0].strip()}, {key[1] or '-'}) {col}: printed blank, "
                    f"but Parquet {pq_null[col][0]} = {data[pq_null[col][0]][r]!r} (expected null)"
                )
            if got != want:
                pq_col = {
                    "RawShares": "raw_shares",
                    "NormShares": "norm_shares",
                    "RawUsage": "raw_usage",
                    "NormUsage": "norm_usage",
                    "EffectvUsage": "effective_usage",
                    "FairShare": "fs_factor",
                    "LevelFS": "level_fs",
                    "Partition": "partition",
                    "ID": "id",
                    "GrpTRESMins": "grp_tres_mins",
                    "TRESRunMins": "tres_run_secs",
                }[col]
                ck.fail(
                    f"{path.name}:{lineno} ({key[0].strip()}, {key[1] or '-'}) {col}: printed {got!r}, "
                    f"Parquet {pq_col} = {data[pq_col][r]!r} prints as {want!r}"
                )
    left = [r for rows in by_key.values() for r in rows]
    if left:
        ck.fail(f"{path.name}: {len(left)} Parquet association(s) not printed, e.g. id {data['id'][left[0]]}")
    return seen, compared


# --- 3. sprio.txt against jobs.parquet --------------------------------------------------------

# sprio's default (and `-l`) fields: header -> (width, right-justified). The first PARTITION is the
# partition name (`%9r`); a later one is the weighted partition factor (`%.10P`).
SPRIO_FIELDS = {
    "JOBID": (15, True),
    "PARTITION": (9, False),
    "USER": (8, True),
    "ACCOUNT": (8, True),
    "PRIORITY": (10, True),
    "SITE": (10, True),
    "AGE": (10, True),
    "ASSOC": (10, True),
    "FAIRSHARE": (10, True),
    "JOBSIZE": (10, True),
    "PARTITION_FACTOR": (10, True),
    "QOSNAME": (10, True),
    "QOS": (10, True),
    "NICE": (11, True),
    "TRES": (20, True),
}

PRIO_COLUMNS = {
    "AGE": "prio_age",
    "ASSOC": "prio_assoc",
    "FAIRSHARE": "prio_fairshare",
    "JOBSIZE": "prio_jobsize",
    "PARTITION_FACTOR": "prio_partition",
    "QOS": "prio_qos",
}

U32_MAX = 2**32 - 1


def sprio_cell(s: str, width: int, right: bool) -> str:
    """sprio's `_print_str`: right-justified fields are padded then cut, left ones cut then padded."""
    if right:
        return (" " * max(0, width - len(s)) + s)[:width]
    return s[:width].ljust(width)


def check_sprio(ck: Checker, path: Path, data: dict[str, list]) -> tuple[int, int]:
    lines = path.read_text().splitlines()
    if not lines:
        ck.fail(f"{path.name}: empty")
        return 0, 0
    fields: list[tuple[str, int, bool]] = []
    for token in lines[0].split():
        name = "PARTITION_FACTOR" if token == "PARTITION" and any(f[0] == "PARTITION" for f in fields) else token
        if name not in SPRIO_FIELDS:
            ck.fail(f"{path.name}: unknown header field {token!r} (expected sprio's default format)")
            return 0, 0
        fields.append((name, *SPRIO_FIELDS[name]))
    spans, pos = [], 0
    for name, width, right in fields:
        spans.append((pos, pos + width))
        pos += width + 1
    header = lines[0].ljust(pos)
    for (name, width, right), (s, e) in zip(fields, spans):
        label = "PARTITION" if name == "PARTITION_FACTOR" else name
        if header[s:e] != sprio_cell(label, width, right):
            ck.fail(f"{path.name}: header field {label} is not where sprio's default format puts it")
            return 0, 0

    n = len(data["job_id"])
    # sprio sorts rows by job id (stably); jobs.parquet keeps the scoring order.
    order = sorted(range(n), key=lambda r: data["job_id"][r])
    tres_cols = [c for c in data if c.startswith("prio_tres_")]
    body = lines[1:]
    if len(body) != n:
        ck.fail(f"{path.name}: {len(body)} rows, jobs.parquet has {n}")
    compared = 0
    for lineno, (line, r) in enumerate(zip(body, order), start=2):
        padded = line.ljust(pos)
        for (name, width, right), (s, e) in zip(fields, spans):
            cell = padded[s:e]
            if name == "PRIORITY":
                compared += 1
                want = data["priority"][r]
                try:
                    got = int(cell)
                except ValueError:
                    got = None
                # The stored priority is clamped to [1, 2^32-1]; sprio prints the sum unclamped above.
                if got is None or not (got == want or (want == U32_MAX and got >= want)):
                    ck.fail(
                        f"{path.name}:{lineno} job {data['job_id'][r]} PRIORITY: printed {cell.strip()!r}, "
                        f"Parquet priority = {want}"
                    )
                continue
            if name == "JOBID":
                text, src = str(data["job_id"][r]), "job_id"
            elif name == "PARTITION":
                text, src = data["partition"][r], "partition"
            elif name == "USER":
                text, src = data["user"][r], "user"
            elif name == "ACCOUNT":
                text, src = data["account"][r], "account"
            elif name == "QOSNAME":
                text, src = data["qos"][r] or "", "qos"
            elif name == "SITE":
                text, src = "%.0f" % data["site_factor"][r], "site_factor"
            elif name == "NICE":
                text, src = "%.0f" % data["nice"][r], "nice"
            elif name == "TRES":
                parts = ["%s=%.0f" % (c.removeprefix("prio_tres_"), data[c][r]) for c in tres_cols if data[c][r] != 0.0]
                # The Parquet column names spell `/` as `_`; the text keeps `/`.
                text, src, cell = ",".join(parts), "prio_tres_*", cell.replace("/", "_")
            else:
                src = PRIO_COLUMNS[name]
                text = "%.0f" % data[src][r]
            compared += 1
            want = sprio_cell(text, width, right)
            if cell != want:
                label = "PARTITION" if name == "PARTITION_FACTOR" else name
                ck.fail(
                    f"{path.name}:{lineno} job {data['job_id'][r]} {label}: printed {cell.strip()!r}, "
                    f"Parquet {src} = {data[src][r] if src in data else text!r} prints as {want.strip()!r}"
                )
    return min(len(body), n), compared


# --- Main -------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} RUN_DIR  (a directory written by `fairshare run --out-dir`)", file=sys.stderr)
        return 2
    run = Path(argv[1])
    assoc_path = run / "associations.parquet"
    if not assoc_path.is_file() or not (run / "sshare.txt").is_file():
        print(f"check_run: {run} has no associations.parquet and sshare.txt: not a run directory", file=sys.stderr)
        return 2
    versions = f"pyarrow {pyarrow.__version__}, polars {pl.__version__}, duckdb {duckdb.__version__}"
    ck = Checker()
    passed = failed = 0

    def step(message_ok: str, before: int) -> None:
        nonlocal passed, failed
        if ck.count == before:
            passed += 1
            print(f"check_run: ok   {message_ok}")
        else:
            failed += 1
            print(f"check_run: FAIL {message_ok.split(':')[0]}")

    before = ck.count
    cols, assoc = check_readers(ck, assoc_path)
    step(
        f"associations.parquet: {len(assoc.get('id', []))} rows x {len(cols)} columns, identical in {versions}", before
    )

    before = ck.count
    if assoc:
        rows, cells = check_sshare(ck, run / "sshare.txt", assoc)
        step(f"sshare.txt: {rows} rows, {cells} printed values match associations.parquet", before)

    jobs_path, sprio_path = run / "jobs.parquet", run / "sprio.txt"
    if jobs_path.is_file() != sprio_path.is_file():
        ck.fail(f"{run}: one of jobs.parquet and sprio.txt without the other")
        failed += 1
    elif not jobs_path.is_file():
        print("check_run: skip jobs.parquet and sprio.txt: the run had no pending queue")
    else:
        before = ck.count
        cols, jobs = check_readers(ck, jobs_path)
        step(f"jobs.parquet: {len(jobs.get('job_id', []))} rows x {len(cols)} columns, identical in {versions}", before)
        before = ck.count
        if jobs:
            rows, cells = check_sprio(ck, sprio_path, jobs)
            step(f"sprio.txt: {rows} rows, {cells} printed values match jobs.parquet", before)

    if ck.count:
        for e in ck.errors:
            print(f"check_run: mismatch: {e}", file=sys.stderr)
        if ck.count > len(ck.errors):
            print(f"check_run: ... and {ck.count - len(ck.errors)} more", file=sys.stderr)
    print(f"check_run: {passed} passed, {failed} failed")
    return 1 if failed or ck.count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
