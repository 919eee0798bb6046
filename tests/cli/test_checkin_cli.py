from typer.testing import CliRunner

from bridge.cli.main import app
from tests.helpers import write_config


def test_checkin_and_import_checkins_from_the_command_line(tmp_path):
    cli = CliRunner()
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    done = cli.invoke(app, ["-c", str(cfg), "checkin", "energy=4", "stress=2"])
    assert done.exit_code == 0, done.output
    assert "energy 4, stress 2" in done.output
    bad = cli.invoke(app, ["-c", str(cfg), "checkin", "energy=7"])
    assert bad.exit_code == 2 and "error: 'energy=7': the value must be 1-5" in bad.output
    path = tmp_path / "c.csv"
    path.write_text("timestamp,item,value,scale_min,scale_max\n2026-10-01T07:00:00Z,mood,3,1,5\n")
    imported = cli.invoke(app, ["-c", str(cfg), "import", "checkins", str(path)])
    assert imported.exit_code == 0, imported.output
    assert "1 check-ins read, 1 new" in imported.output


def test_validity_without_checkins_says_how_to_start(tmp_path):
    cli = CliRunner()
    cfg = write_config(tmp_path / "config.toml", tmp_path / "data")
    done = cli.invoke(app, ["-c", str(cfg), "validity"])
    assert done.exit_code == 0 and "no check-ins yet" in done.output
    cli.invoke(app, ["-c", str(cfg), "checkin", "energy=4"])
    done = cli.invoke(app, ["-c", str(cfg), "validity", "--json"])
    assert done.exit_code == 0, done.output
    assert '"min_days": 14' in done.output and "paired days so far" in done.output
