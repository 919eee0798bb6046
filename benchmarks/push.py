"""A first Health Auto Export push of a year of minute heart rate, against the Apple export
importer's records/s in the same run.

    python benchmarks/push.py [--minutes 525600] [--mb 200] [--workdir DIR]

Measures, each against a real process:
  push      `rhythm-bridge serve` with [push] enabled on 127.0.0.1; one POST of the JSON the
            app sends when it backfills (a year of minute heart rate: 525,600 items, ~55 MB),
            timed from the first byte sent to the answer; the server's peak RSS (VmHWM)
            before and after, so "flat memory" is a number
  again     the same body once more (every reading already known)
  import    `rhythm-bridge import apple-health` of a generated export (benchmarks/
            gen_apple_export.py, ~200 MB of XML) into a fresh store, records/s over its
            <Record>s, as benchmarks/apple_import.py counts them
Ratios are of records/s; the machine is noisy, so only ratios within one run mean much.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
BIN = Path(sys.executable).parent


def year_of_heart_rate(path: Path, minutes: int) -> None:
    """The JSON the app posts for minute heart rate ("Summarize Data" by minute)."""
    zone = timezone(timedelta(hours=1))
    t = datetime(2025, 11, 1, tzinfo=zone)
    step = timedelta(minutes=1)
    with path.open("w", encoding="utf-8") as out:
        out.write('{"data":{"metrics":[{"name":"heart_rate","units":"count/min","data":[')
        for i in range(minutes):
            avg = 55 + (i * 7919) % 40
            out.write(
                ("," if i else "")
                + f'{{"date":"{t:%Y-%m-%d %H:%M:%S %z}","Min":{avg - 3},"Avg":{avg},'
                f'"Max":{avg + 4},"source":"Jane’s Apple Watch"}}'
            )
            t += step
        out.write("]}]}}")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=int, default=525_600, help="heart-rate items (a year)")
    ap.add_argument("--mb", type=float, default=200.0, help="Apple export XML size in MB")
    ap.add_argument("--workdir", type=Path)
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="push-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = work / "config.toml"
    config.write_text(
        f'timezone = "Europe/Berlin"\ndata_dir = "{work / "store"}"\n'
        f'[web]\nport = {port}\n[push]\nenabled = true\n[secrets]\nbackend = "file"\n'
    )
    env = {
        **os.environ,
        "RHYTHM_BRIDGE_CONFIG": str(config),
        "RHYTHM_BRIDGE_KEYRING_KEY": secrets.token_urlsafe(32),
    }
    cli = str(BIN / "rhythm-bridge")
    body = work / "heart_rate_year.json"
    year_of_heart_rate(body, a.minutes)
    print(f"push body: {body.stat().st_size / 1e6:.0f} MB, {a.minutes:,} heart-rate items")
    token = run([cli, "push-token", "create", "bench"], env).strip().splitlines()[-1]

    server = subprocess.Popen(
        [cli, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    results: dict[str, dict[str, float]] = {}
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(url + "/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        idle = peak_rss_mb(server.pid)
        for name in ("push", "again"):
            started = time.perf_counter()
            with body.open("rb") as fh:
                answer = httpx.post(
                    url + "/api/push/health-auto-export",
                    content=fh,
                    headers={"authorization": f"Bearer {token}"},
                    timeout=600,
                )
            wall = time.perf_counter() - started
            if answer.status_code != 200:
                raise SystemExit(f"push answered {answer.status_code}: {answer.text[:300]}")
            doc = answer.json()
            results[name] = {
                "wall": wall,
                "records": doc["received"],
                "stored": doc["stored"],
                "peak_mb": peak_rss_mb(server.pid),
            }
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)

    from gen_apple_export import BYTES_PER_DAY, generate

    export = work / "export.zip"
    truth = generate(export, days=max(2, round(a.mb * 1e6 / BYTES_PER_DAY)))
    import_config = work / "import.toml"
    import_config.write_text(f'timezone = "Europe/Berlin"\ndata_dir = "{work / "import"}"\n')
    started = time.perf_counter()
    run(
        [cli, "import", "apple-health", str(export)],
        {**env, "RHYTHM_BRIDGE_CONFIG": str(import_config)},
    )
    results["import"] = {
        "wall": time.perf_counter() - started,
        "records": int(truth["xml_records"]),
        "stored": int(truth["records_total"]),
        "peak_mb": float("nan"),
    }

    base = results["import"]["records"] / results["import"]["wall"]
    print(
        f"\n{'':<8}{'records':>10}{'stored':>10}{'wall s':>9}{'records/s':>11}"
        f"{'x import':>10}{'server peak MB':>16}"
    )
    for name, r in results.items():
        rate = r["records"] / r["wall"]
        print(
            f"{name:<8}{r['records']:>10,}{r['stored']:>10,}{r['wall']:>9.1f}{rate:>11,.0f}"
            f"{base / rate:>10.2f}{r['peak_mb']:>16.0f}"
        )
    print(f"server peak RSS before any push: {idle:.0f} MB")
    summary = {
        "push_records_per_s": round(results["push"]["records"] / results["push"]["wall"]),
        "import_records_per_s": round(base),
        "import_rate_over_push_rate": round(
            base / (results["push"]["records"] / results["push"]["wall"]), 2
        ),
        "push_wall_s": round(results["push"]["wall"], 1),
        "server_peak_mb_idle": round(idle),
        "server_peak_mb_after_push": round(results["push"]["peak_mb"]),
    }
    print("\n" + json.dumps(summary))
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
