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


def test_the_editable_install_prints_no_build_warnings(tmp_path):
    # `make demo` and `make test` install in editable mode first: on a fresh machine
    # that used to print pages of setuptools warnings (a license table, the finder).
    build = (
        "import sys\n"
        "from setuptools import build_meta\n"
        "print(build_meta.build_editable(sys.argv[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", build, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    output = done.stdout + done.stderr
    assert "Warning" not in output and "!!" not in output, output
    assert list(tmp_path.glob("rhythm_bridge-*.whl"))


def test_make_demo_installs_the_runtime_alone_and_make_test_the_test_extra(tmp_path):
    # The quickstart's `make demo` must not pull pytest, ruff, mkdocs, playwright, ...
    def planned(target: str) -> str:
        return subprocess.run(
            ["make", "-n", "-C", str(ROOT), f"VENV={tmp_path / 'venv'}", target],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    demo = planned("demo")
    assert "pip install --quiet -e ." in demo and "[test]" not in demo, demo
    assert "rhythm-bridge demo" in demo
    test = planned("test")
    assert '-e ".[test]"' in test and "pytest" in test, test
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in quickstart.strip().splitlines()]
    assert commands == ["make demo", "make test"]
