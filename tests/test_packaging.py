import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_the_wheel_carries_every_data_file_the_code_reads(tmp_path):
    # An editable install reads files from the checkout; a server installs the wheel.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("rhythm_bridge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "bridge/config.example.toml",
        "bridge/schemas/snapshot.schema.json",
        "bridge/sample_data/apple_health_export.zip",
        "bridge/sample_data/calendar.ics",
        "bridge/store/migrations/env.py",
        "bridge/store/migrations/script.py.mako",
        "bridge/store/migrations/versions/0001_initial_schema.py",
        "bridge/daemon/rhythm-bridge.service",
        "mappings/classifier_rules.toml",
        "mappings/meter_weights.toml",
    ):
        assert needed in names, needed
