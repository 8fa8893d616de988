"""An analyst's what-if on the seed site, in Python: double chemistry's shares (3000 to 6000), or
keep usage twice as long (a 28-day half-life), and see whose fair-share rank moves. Run after
`pip install ./python`:

    python3 examples/analyst.py
"""

from pathlib import Path

import polars as pl

import fairshare

SITE = Path(__file__).resolve().parent / "seed-site" / "site.toml"
KEY = ["account", "user"]


def ranks(run: dict, name: str) -> pl.DataFrame:
    """Each user's rank by fair-share factor (1: the most favoured)."""
    users = run["associations"].filter(pl.col("is_user"))
    return users.select(*KEY, pl.col("fs_factor").rank("min", descending=True).cast(pl.Int64).alias(name))


now = ranks(fairshare.run(SITE), "now")
shares = ranks(fairshare.run(SITE, set_shares={"chemistry": 6000}), "chemistry_6000")
longer = ranks(fairshare.run(SITE, half_life="28-0"), "half_life_28d")

table = now.join(shares, on=KEY).join(longer, on=KEY).with_columns(
    moved=(pl.col("chemistry_6000") - pl.col("now")).abs() + (pl.col("half_life_28d") - pl.col("now")).abs()
)
movers = table.filter(pl.col("moved") > 0).sort("moved", descending=True)
print(f"{movers.height} of {table.height} users change rank under the what-ifs:")
print(movers.drop("moved"))
