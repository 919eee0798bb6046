"""Apple Health import: `rhythm-bridge import apple-health` against a raw floor, same run.

    python benchmarks/apple_import.py [--mb 200] [--big] [--workdir DIR] [--keep]
    python benchmarks/apple_import.py --crossover   # where a parsing child starts to pay

Generates an Apple-Health-shaped export.zip (benchmarks/gen_apple_export.py; about 200 MB
of XML, 1 GB with --big), then measures, each in its own process (wall time and peak
RSS from wait4):

  floor     pyexpat extracting (type, source, start, end, value) tuples of every Record
            straight into SQLite with executemany, one transaction, a UNIQUE key on
            those columns and INSERT OR IGNORE (the least an idempotent importer does)
  import    `rhythm-bridge import apple-health` into a fresh store (process start,
            migrations, parsing, UTC conversion, upserts, the hash record: everything)
  again     the same command on the same file (skipped by its content hash)
  forced    the same with --force: every record parsed and upserted again, 0 new rows
  import-1p the first import again into another fresh store, parsed in the writing
            process itself (RB_APPLE_PARSE_APART=0; big files are otherwise parsed
            in a child process, bridge/intake/parse_apart.py)
  dogsheep  `healthkit-to-sqlite` when installed (pip install -e ".[bench]")

records/s counts the file's top-level <Record> elements for every row, so the rates
compare like with like. The machine is noisy: only the ratios within one run mean much,
and on a shared machine the CPU-time ratio (user + sys of the child) is the steadier one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from xml.parsers import expat

HERE = Path(__file__).resolve().parent
NEW = re.compile(r"; (\d+) new, ")
sys.path.insert(0, str(HERE))
BIN = Path(sys.executable).parent


def floor(export: Path, db: Path) -> None:
    """The raw floor, run in a child process."""
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE r (type TEXT, source TEXT, start TEXT, end TEXT, value TEXT, "
        "UNIQUE (type, source, start, end))"
    )
    rows: list[tuple[str, str, str, str, str | None]] = []

    def start(name: str, a: dict[str, str]) -> None:
        if name == "Record":
            rows.append((a["type"], a["sourceName"], a["startDate"], a["endDate"], a.get("value")))

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    with zipfile.ZipFile(export) as zf, zf.open("apple_health_export/export.xml") as fh, conn:
        while chunk := fh.read(1 << 20):
            parser.Parse(chunk, False)
            conn.executemany("INSERT OR IGNORE INTO r VALUES (?, ?, ?, ?, ?)", rows)
            rows.clear()
        parser.Parse(b"", True)
    conn.close()


def measure(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float | str]:
    """Wall seconds and peak RSS (MB) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-500:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024, "out": (out + err).strip()}


def row(name: str, m: dict[str, float | str], records: int, base: dict[str, float | str]) -> str:
    wall, cpu = float(m["wall"]), float(m["cpu"])
    return (
        f"{name:<11}{records / wall:>12,.0f}{wall:>9.1f}{cpu:>8.1f}{float(m['rss_mb']):>10.0f}"
        f"{wall / float(base['wall']):>8.2f}{cpu / float(base['cpu']):>8.2f}   "
        f"{str(m['out']).splitlines()[-1][:70] if m['out'] else ''}"
    )


def crossover(repeat: int) -> None:
    """Where parsing in a child starts to pay: the same first import both ways, the median
    of `repeat` alternating runs per size (the child costs a process start)."""
    from gen_apple_export import BYTES_PER_DAY, generate

    work = Path(tempfile.mkdtemp(prefix="apple-crossover-"))
    print(f"{'XML MB':>7}{'one wall':>10}{'child wall':>12}{'one cpu':>9}{'child cpu':>11}")
    try:
        for mb in (1, 2, 4, 8, 16, 32):
            export = work / f"export-{mb}.zip"
            truth = generate(export, days=max(2, round(mb * 1e6 / BYTES_PER_DAY)))
            runs: dict[str, list[dict[str, float | str]]] = {"0": [], "1": []}
            for i in range(repeat):
                for mode in ("0", "1"):
                    store = work / f"store-{mb}-{mode}-{i}"
                    config = work / f"config-{mb}-{mode}-{i}.toml"
                    config.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{store}"\n')
                    env = {
                        **os.environ,
                        "RHYTHM_BRIDGE_CONFIG": str(config),
                        "RB_APPLE_PARSE_APART": mode,
                    }
                    cli = [str(BIN / "rhythm-bridge"), "import", "apple-health", str(export)]
                    runs[mode].append(measure(cli, env))
                    shutil.rmtree(store, ignore_errors=True)

            mid = {
                (mode, key): sorted(float(m[key]) for m in runs[mode])[repeat // 2]
                for mode in runs
                for key in ("wall", "cpu")
            }
            print(
                f"{truth['xml_bytes'] / 1e6:>7.1f}{mid['0', 'wall']:>10.2f}"
                f"{mid['1', 'wall']:>12.2f}{mid['0', 'cpu']:>9.2f}{mid['1', 'cpu']:>11.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="XML size in MB (default 200)")
    ap.add_argument("--big", action="store_true", help="1 GB of XML")
    ap.add_argument("--workdir", type=Path, help="where to write (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the export and the stores")
    ap.add_argument("--no-dogsheep", action="store_true", help="skip healthkit-to-sqlite")
    ap.add_argument("--floor", nargs=2, type=Path, help=argparse.SUPPRESS)
    ap.add_argument(
        "--crossover",
        action="store_true",
        help="first imports of 1-32 MB, parsed in one process vs in a child (--repeat N)",
    )
    ap.add_argument("--repeat", type=int, default=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.floor:
        floor(*a.floor)
        return
    if a.crossover:
        crossover(a.repeat)
        return
    from gen_apple_export import BYTES_PER_DAY, generate

    mb = 1000.0 if a.big else a.mb
    work = a.workdir or Path(tempfile.mkdtemp(prefix="apple-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    export = work / "export.zip"
    days = max(2, round(mb * 1e6 / BYTES_PER_DAY))
    t0 = time.perf_counter()
    truth = generate(export, days=days)
    print(
        f"export: {export} ({export.stat().st_size / 1e6:.0f} MB zip, "
        f"{truth['xml_bytes'] / 1e6:.0f} MB XML, {truth['xml_records']:,} <Record>s, "
        f"{truth['records_total']:,} readings kept; generated in {time.perf_counter() - t0:.0f}s)"
    )
    records = int(truth["xml_records"])
    config = work / "config.toml"
    config.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{work / "store"}"\n')
    shutil.rmtree(work / "store", ignore_errors=True)
    (work / "floor.db").unlink(missing_ok=True)
    env = {**os.environ, "RHYTHM_BRIDGE_CONFIG": str(config)}
    cli = [str(BIN / "rhythm-bridge"), "import", "apple-health", str(export)]

    results = {
        "floor": measure([sys.executable, __file__, "--floor", str(export), str(work / "floor.db")])
    }
    results["import"] = measure(cli, env)
    results["again"] = measure(cli, env)
    results["forced"] = measure([*cli, "--force"], env)
    # The same first import with parsing and writing in one process (no child).
    one = work / "config-one.toml"
    one.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{work / "store-one"}"\n')
    shutil.rmtree(work / "store-one", ignore_errors=True)
    results["import-1p"] = measure(
        cli, {**env, "RHYTHM_BRIDGE_CONFIG": str(one), "RB_APPLE_PARSE_APART": "0"}
    )
    dogsheep = shutil.which("healthkit-to-sqlite", path=str(BIN)) or shutil.which(
        "healthkit-to-sqlite"
    )
    if dogsheep and not a.no_dogsheep:
        (work / "dogsheep.db").unlink(missing_ok=True)
        results["dogsheep"] = measure([dogsheep, str(export), str(work / "dogsheep.db")])

    base = results["floor"]
    print(
        f"\n{'':<11}{'records/s':>12}{'wall s':>9}{'cpu s':>8}{'peak MB':>10}"
        f"{'x wall':>8}{'x cpu':>8}   output"
    )
    for name, m in results.items():
        print(row(name, m, records, base))
    summary: dict[str, object] = {
        name: {
            "wall_s": round(float(m["wall"]), 2),
            "cpu_s": round(float(m["cpu"]), 2),
            "peak_rss_mb": round(float(m["rss_mb"]), 1),
            **({"new_rows": int(new.group(1))} if (new := NEW.search(str(m["out"]))) else {}),
        }
        for name, m in results.items()
    }
    summary["ratio_import_vs_floor"] = round(
        float(results["import"]["wall"]) / float(base["wall"]), 2
    )
    summary["xml_mb"] = round(truth["xml_bytes"] / 1e6)
    summary["xml_records"] = records
    print("\n" + json.dumps(summary))
    if not a.keep and not a.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
