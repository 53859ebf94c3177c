#!/usr/bin/env python3
"""Summarises `perf sched timehist --state` output (benches/scripts/sched.sh): for each
kind of thread (its name, digits dropped), how often it was switched out,
how often while still runnable (preempted), its CPU time, and how long it
waited for a CPU once runnable (sch delay)."""
import re
import sys
from collections import defaultdict

rows = defaultdict(lambda: {"delay": [], "run": 0.0, "preempted": 0, "switches": 0})
pat = re.compile(r"^\s*[\d.]+\s+\[\d+\]\s+(.+?)\[[\d/]+\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")
for line in sys.stdin:
    m = pat.match(line)
    if not m:
        continue
    name, _wait, delay, run, state = m.groups()
    kind = re.sub(r"\d+$", "", name.strip()).rstrip(":-")
    r = rows[kind]
    r["delay"].append(float(delay))
    r["run"] += float(run)
    r["switches"] += 1
    if state == "R":
        r["preempted"] += 1

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] if v else 0.0

print(f"{'thread':<24}{'switches':>9}{'preempted':>10}{'cpu ms':>9}{'delay p50':>10}{'p99':>8}{'p99.9':>8}{'max ms':>8}")
for kind, r in sorted(rows.items(), key=lambda kv: -kv[1]["run"])[:8]:
    d = r["delay"]
    print(f"{kind:<24}{r['switches']:>9}{r['preempted']:>10}{r['run']:>9.0f}{pct(d, .5):>10.3f}{pct(d, .99):>8.3f}{pct(d, .999):>8.3f}{max(d):>8.3f}")
