"""An analyst's what-if on the seed site: double chemistry's shares (3000 to 6000), or keep usage
twice as long (a 28-day half-life), and see whose fair-share rank moves. After `pip install ./python`:
`python3 examples/analyst.py [movers.png]` (the plot needs matplotlib)."""

import sys
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
table = now.join(shares, on=KEY).join(longer, on=KEY)
movers = table.filter((pl.col("chemistry_6000") != pl.col("now")) | (pl.col("half_life_28d") != pl.col("now")))
print(f"{movers.height} of {table.height} users change rank under the what-ifs:")
print(movers.sort("now"))

if len(sys.argv) > 1:  # each mover's rank now and under each what-if, as a slope chart
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for row in movers.iter_rows(named=True):
        ax.plot([0, 1, 2], [row["now"], row["chemistry_6000"], row["half_life_28d"]], marker="o", label=row["user"])
    ax.set(xticks=[0, 1, 2], xticklabels=["now", "chemistry 6000", "half-life 28d"], ylabel="rank (1 = first)")
    ax.invert_yaxis(), ax.legend(fontsize="small"), fig.savefig(sys.argv[1], bbox_inches="tight")
