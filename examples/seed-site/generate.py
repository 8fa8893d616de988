#!/usr/bin/env python3
"""Writes the seed site's synthetic job month and pending queue (jobs.csv, pending.csv).

Deterministic (a fixed seed): rerunning it rewrites the same bytes. The users and accounts are
those of tree.csv; the partitions and TRES shapes those of slurm.conf. Usage: python3 generate.py
"""
import random

rng = random.Random(20260108)
NOW = 1767830400  # 2026-01-08T00:00:00Z
MONTH = 30 * 86400
users = []
for line in open("tree.csv").read().splitlines()[1:]:
    f = line.split(",")
    if f[3]:
        users.append((f[3], f[2]))
# A few busy users and many light ones, as on a real cluster.
weights = [8 if u in ("dana", "gus", "eli") else 3 if u in ("pat", "quinn", "bob", "ivan") else 1 for u, _ in users]
parts = [
    ("shared", 32, 4), ("shared", 32, 4), ("skylake", 48, 4), ("abudhabi", 64, 4),
    ("ivybridge", 16, 4), ("gpu", 48, 8), ("serial_requeue", 16, 4), ("gpu_requeue", 48, 8),
]
qos = ["", "", "normal", "normal", "low", "high"]


def tres(part, cores_max, gb_per_core):
    cpus = rng.choice([c for c in (1, 2, 4, 8, 16, 32, 48, 64) if c <= cores_max])
    t = f"cpu={cpus},mem={cpus * gb_per_core}G,node=1"
    if part.startswith("gpu"):
        t += f",gres/gpu={rng.choice((1, 2, 4))}"
    return cpus, t


with open("jobs.csv", "w") as out:
    out.write("job_id,user,account,partition,qos,start,end,tres_alloc\n")
    for i in range(1500):
        user, account = rng.choices(users, weights)[0]
        part, cores, gb = rng.choice(parts)
        _, t = tres(part, cores, gb)
        start = NOW - MONTH + rng.randrange(MONTH)
        run = int(10 ** rng.uniform(1.5, 5.2))
        end = "" if start + run > NOW else str(start + run)
        out.write(f"{100000 + i},{user},{account},{part},{rng.choice(qos)},{start},{end},\"{t}\"\n")

with open("pending.csv", "w") as out:
    out.write("job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n")
    for i in range(120):
        user, account = rng.choices(users, weights)[0]
        part, cores, gb = rng.choice(parts)
        if rng.random() < 0.15:
            part = f"{part},serial_requeue" if not part.startswith("gpu") else f"{part},gpu_requeue"
        cpus, t = tres(part.split(",")[0], cores, gb)
        submit = NOW - rng.randrange(10 * 86400)
        limit = rng.choice(("60", "720", "1-0", "2-12:00:00", ""))
        out.write(f"{200000 + i},{user},{account},\"{part}\",{rng.choice(qos)},{submit},{submit + rng.randrange(300)},1,{cpus},{limit},0,0,\"{t}\"\n")
