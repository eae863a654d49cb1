"""The two tables of bench/confinement.sh from its output folder: protection × confinement
(`bcb env check --json` in each) and attack × confinement (each test's exit and log).
Usage: python3 bench/confinement_tables.py OUT CONF..."""
import json
import re
import sys
from pathlib import Path

out = Path(sys.argv[1])
confs = sys.argv[2:]


def protections(conf):
    text = (out / conf / "env-check.json").read_text()
    start = text.find("{")
    if start < 0:
        return None
    return {p["name"]: p["active"] for p in json.loads(text[start:])["protections"]}


def verdict(conf, suite, test, rc):
    log = (out / conf / f"{suite}--{test}.log").read_text(errors="replace")
    panic = re.search(r"panicked at [^\n]*\n(.*)", log)
    why = panic.group(1).strip()[:160] if panic else ""
    if rc == 124:
        return "timeout", "no end within the time limit"
    if rc == 0:
        skip = re.search(r"(?:skipping|SKIPPED)[^\n]*", log)
        if skip:
            return "skipped", skip.group(0)[:160]
        return "contained", ""
    if "control: " in why:
        return "moot", why
    if "KilledAtDeadline" in why:
        return "timeout", why
    if "HarnessError" in why:
        return "no sample runs", why
    return "NOT contained", why


cols = {c: protections(c) for c in confs}
names = []
for c in confs:
    for n in cols[c] or {}:
        if n not in names:
            names.append(n)
print("| protection | " + " | ".join(confs) + " |")
print("|---|" + "---|" * len(confs))
for n in names:
    cells = []
    for c in confs:
        p = cols[c]
        cells.append("?" if p is None else ("—" if n not in p else ("on" if p[n] else "**off**")))
    print(f"| {n} | " + " | ".join(cells) + " |")
on = []
for c in confs:
    p = cols[c]
    on.append("?" if p is None else f"{sum(p.values())} of {len(p)}")
print("| **on** | " + " | ".join(on) + " |")
print()

rows, notes = {}, []
for c in confs:
    results = out / c / "results.txt"
    # ONLY='^$' runs `bcb env check` alone: the protection table, no attack rows.
    for line in (results.read_text() if results.exists() else "").splitlines():
        suite, test, rc, secs = line.split()
        v, why = verdict(c, suite, test, int(rc))
        rows.setdefault(f"{suite}::{test}", {})[c] = (v, secs)
        if why:
            notes.append(f"- {c}, `{suite}::{test}` ({v}): {why}")
print("| test | " + " | ".join(confs) + " |")
print("|---|" + "---|" * len(confs))
for t, cells in rows.items():
    print(f"| `{t}` | " + " | ".join(f"{cells[c][0]} ({cells[c][1]} s)" if c in cells else "?" for c in confs) + " |")
print()
print("\n".join(notes))
