"""Home Assistant over MQTT against a real broker (Debian's mosquitto on 127.0.0.1).

A subscriber stands in for Home Assistant: it checks every discovery message against
Home Assistant's documented rules (tests/mqtt_broker.py), reads the states, and presses
the buttons the way Home Assistant does (a non-retained PRESS on the command topic).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bridge.config import MqttSettings, Settings
from bridge.out.mqtt.entities import ACTIONS, METERS
from bridge.out.mqtt.link import REMEMBERED, MqttError, MqttLink, publish_once, remove_entities
from bridge.store.models import Feedback, Recommendation
from tests.conftest import DEMO_NOW, SAMPLE
from tests.helpers import cli_process, wait_until, write_config
from tests.mqtt_broker import (
    MOSQUITTO,
    Mosquitto,
    Watcher,
    free_port,
    ha_problems,
    make_ca,
    state_problems,
)

PREFIX, BASE = "homeassistant", "rhythm-bridge"

if not Path(MOSQUITTO).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{MOSQUITTO} is not installed; .ci/run installs it with apt")
    pytest.skip(
        f"{MOSQUITTO} is not installed (apt-get install mosquitto)", allow_module_level=True
    )


@pytest.fixture
def broker(tmp_path: Path):
    b = Mosquitto(tmp_path / "broker").start()
    yield b
    b.stop()


@pytest.fixture
def watcher(broker: Mosquitto):
    w = Watcher(broker.port)
    yield w
    w.close()


def with_mqtt(settings: Settings, **mqtt) -> Settings:
    return settings.model_copy(update={"mqtt": MqttSettings(enabled=True, **mqtt)})


def with_sources(settings: Settings, **sources) -> Settings:
    return settings.model_copy(update={"sources": settings.sources.model_copy(update=sources)})


def configs_by_id(watcher: Watcher) -> dict[str, tuple[str, dict]]:
    """unique_id -> (component, config) of every retained discovery config."""
    out = {}
    for topic, payload in watcher.configs(PREFIX).items():
        config = json.loads(payload)
        out[config["unique_id"]] = (topic.split("/")[1], config)
    return out


def all_published(n: int):
    return lambda latest: sum(t.startswith(PREFIX + "/") for t in latest) >= n


def feedback_rows(store) -> list[Feedback]:
    with store.session() as session:
        return list(session.execute(select(Feedback)).scalars())


# ---- discovery and states -------------------------------------------------------------


def test_discovery_follows_home_assistant_rules_and_states_match_the_store(demo, broker, watcher):
    from bridge.intake.sources import read_context, run_source
    from bridge.out.snapshot import build_snapshot

    settings, store = demo
    # One source enabled and failing: its problem sensor must say ON.
    ics = settings.sources.ics.model_copy(
        update={"enabled": True, "paths": [str(settings.data_path / "gone.ics")]}
    )
    settings = with_mqtt(with_sources(settings, ics=ics), port=broker.port)
    assert run_source(store, settings, "ics", read_context(settings, DEMO_NOW)).status == "error"

    link = MqttLink(settings, store, listen=False, clock=lambda: DEMO_NOW).connect(10)
    try:
        link.publish(timeout=10)
    finally:
        link.close(offline=False)
    # 5 meters, recommendation, 3 belief axes, 1 enabled source, 3 buttons, 6 check-in
    # numbers; the source's attributes are the last state published.
    watcher.wait_for(all_published(19))
    watcher.wait_for(lambda latest: f"{BASE}/source_ics/attributes" in latest)
    configs = watcher.configs(PREFIX)
    assert len(configs) == 19
    problems = [p for topic, payload in configs.items() for p in ha_problems(topic, payload)]
    assert problems == []

    by_id = configs_by_id(watcher)
    assert len(by_id) == 19  # unique ids
    devices = {json.dumps(c["device"], sort_keys=True) for _, c in by_id.values()}
    assert len(devices) == 1  # one device groups them
    latest = dict(watcher.latest)
    for component, config in by_id.values():
        assert state_problems(config, component, latest) == []
        for item in config["availability"]:
            assert item["topic"] in latest

    snap = build_snapshot(store, settings, DEMO_NOW)
    current = snap["current"]
    for m in METERS:
        _, config = by_id[f"rhythm-bridge_{m}"]
        assert config["unit_of_measurement"] == "%" and config["state_class"] == "measurement"
        assert float(latest[config["state_topic"]]) == pytest.approx(current[m] * 100, abs=0.05)
        attrs = json.loads(latest[config["json_attributes_topic"]])
        assert attrs["confidence"] == current["confidence"][m]
        assert attrs["staleness"] == current["freshness"][m]
        assert attrs["stale"] is current["freshness"][m]["stale"]
        assert attrs["value"] == current[m]
        inputs = current["provenance"][m]["inputs"]
        biggest = max(inputs, key=lambda i: abs(i["effect"]))["name"]
        assert attrs["top_inputs"][0]["name"] == biggest and len(attrs["top_inputs"]) <= 3

    rec = snap["recommendation"]
    _, config = by_id["rhythm-bridge_recommendation"]
    assert latest[config["state_topic"]] == rec["action"] and rec["action"] in ACTIONS
    attrs = json.loads(latest[config["json_attributes_topic"]])
    assert attrs["id"] == rec["id"] and attrs["rationale"] == rec["rationale"]
    assert attrs["slot_name"] == rec["slot_name"] and attrs["response"] is None
    assert attrs["window"] == rec["window"] and attrs["window"]["start"]  # a free window
    assert attrs["window_reason"] == rec["window_reason"]
    for axis, value in zip(("social", "morning", "work"), rec["belief"], strict=True):
        _, config = by_id[f"rhythm-bridge_belief_{axis}"]
        assert float(latest[config["state_topic"]]) == pytest.approx(value)

    component, config = by_id["rhythm-bridge_source_ics"]
    assert component == "binary_sensor" and config["device_class"] == "problem"
    assert latest[config["state_topic"]] == "ON"
    assert "gone.ics" in json.loads(latest[config["json_attributes_topic"]])["last_error"]

    # Published once: available, but nobody listens for the buttons.
    assert latest[f"{BASE}/availability"] == "online"
    assert latest[f"{BASE}/answers/availability"] == "offline"
    _, accept = by_id["rhythm-bridge_accept"]
    assert accept["availability_mode"] == "all"
    assert {a["topic"] for a in accept["availability"]} == {
        f"{BASE}/availability",
        f"{BASE}/answers/availability",
    }


def test_a_slot_without_meters_or_recommendation_reads_unknown_not_zero(demo, broker, watcher):
    settings, store = demo
    settings = with_mqtt(settings, port=broker.port)
    later = DEMO_NOW + timedelta(days=30)  # nothing computed for that day
    link = MqttLink(settings, store, listen=False, clock=lambda: later).connect(10)
    try:
        link.publish(timeout=10)
    finally:
        link.close(offline=False)
    # The belief states are published after the meters and the recommendation.
    watcher.wait_for(lambda latest: f"{BASE}/belief_work/attributes" in latest)
    assert watcher.latest[f"{BASE}/vitality/state"] == "None"  # Home Assistant: unknown
    assert watcher.latest[f"{BASE}/recommendation/state"] == "None"
    assert watcher.latest[f"{BASE}/belief_work/state"] == "None"


# ---- the buttons ----------------------------------------------------------------------


def page_answer(settings, store):
    """What the daemon gives the link: the same answer() as the page's buttons."""
    from bridge.cycle.answer import answer

    return lambda rec_id, response, now, channel: answer(
        store, settings, rec_id, response, now, channel=channel
    )


@pytest.fixture
def cycled(settings, store):
    """A real cycle on the sample data in the test's database (SQLite or PostgreSQL)."""
    from bridge.cycle.run import run_cycle
    from bridge.intake.ingest import import_file
    from bridge.intake.sources import read_context

    ctx = read_context(settings, DEMO_NOW)
    import_file(store, "apple-health", SAMPLE / "apple_health_export.zip", ctx)
    import_file(store, "ics", SAMPLE / "calendar.ics", ctx)
    run_cycle(settings, store, now=DEMO_NOW)
    return settings, store


def test_buttons_answer_the_current_recommendation_once(cycled, broker, watcher):
    settings, store = cycled
    settings = with_mqtt(settings, port=broker.port)
    # A retained "press" left on the broker is not a press: it would answer again on
    # every connect (the broker hands it to the link when it subscribes).
    watcher.press(f"{BASE}/answer/ignore", retain=True)
    link = MqttLink(settings, store, clock=lambda: DEMO_NOW, answer=page_answer(settings, store))
    link.start()
    try:
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/answers/availability") == "online")
        watcher.wait_for(all_published(12))
        by_id = configs_by_id(watcher)
        assert by_id["rhythm-bridge_ignore"][1]["command_topic"] == f"{BASE}/answer/ignore"
        with store.session() as session:
            rec = session.execute(select(Recommendation)).scalar_one()
        time.sleep(0.3)
        assert feedback_rows(store) == []

        watcher.press(by_id["rhythm-bridge_accept"][1]["command_topic"])
        deadline = time.monotonic() + 10
        while not feedback_rows(store):
            assert time.monotonic() < deadline, "the press was not stored"
            time.sleep(0.05)
        # A second answer (another button) changes nothing, like on the page.
        watcher.press(by_id["rhythm-bridge_reschedule"][1]["command_topic"])
        attrs_topic = by_id["rhythm-bridge_recommendation"][1]["json_attributes_topic"]
        watcher.wait_for(
            lambda latest: json.loads(latest.get(attrs_topic, "{}")).get("response") == "accepted"
        )
        time.sleep(0.5)  # let the reschedule press arrive
        rows = feedback_rows(store)
        assert [(r.recommendation_id, r.response, r.channel, r.reward) for r in rows] == [
            (rec.id, "accepted", "mqtt", 1.0)
        ]
        assert json.loads(watcher.latest[attrs_topic])["channel"] == "mqtt"
    finally:
        link.close()
    # A clean stop: entities unavailable, buttons not pressable.
    watcher.wait_for(
        lambda latest: (
            latest.get(f"{BASE}/availability") == "offline"
            and latest.get(f"{BASE}/answers/availability") == "offline"
        )
    )


def test_reschedule_proposes_the_next_window_like_the_page(demo, broker, watcher):
    settings, store = demo
    settings = with_mqtt(settings, port=broker.port)
    link = MqttLink(settings, store, clock=lambda: DEMO_NOW, answer=page_answer(settings, store))
    link.start()
    try:
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/answers/availability") == "online")
        # Availability goes out first, the states right after it.
        watcher.wait_for(lambda latest: f"{BASE}/recommendation/attributes" in latest)
        first = json.loads(watcher.latest[f"{BASE}/recommendation/attributes"])
        action = watcher.latest[f"{BASE}/recommendation/state"]
        assert "window" in first and "window_reason" in first
        watcher.press(f"{BASE}/answer/reschedule")
        # Published once the whole answer (and its proposal) is stored.
        watcher.wait_for(
            lambda latest: (
                json.loads(latest[f"{BASE}/recommendation/attributes"])["response"] == "rescheduled"
            )
        )
        with store.session() as session:
            recs = session.execute(select(Recommendation).order_by(Recommendation.id)).scalars()
            proposals = [r for r in recs if r.rescheduled_from == first["id"]]
        fb = feedback_rows(store)[0]
        assert (fb.recommendation_id, fb.response, fb.channel) == (
            first["id"],
            "rescheduled",
            "mqtt",
        )
        # The page proposes the next free window for the same action; so does the button.
        assert [(p.action, p.window_start is not None) for p in proposals] == [(action, True)]
    finally:
        link.close()


def test_a_press_can_name_the_recommendation_and_bad_payloads_answer_nothing(demo, broker):
    settings, store = demo
    link = MqttLink(with_mqtt(settings, port=broker.port), store, clock=lambda: DEMO_NOW)
    assert link.answer("ignore", "not-a-number") is None
    assert link.answer("ignore", "99999") is None  # no such recommendation
    with store.session() as session:
        rec_id = session.execute(select(Recommendation.id)).scalars().first()
    fb, created = link.answer("ignore", str(rec_id))
    assert created and fb.response == "ignored" and fb.channel == "mqtt"
    assert link.answer("accept", str(rec_id))[1] is False


# ---- broker faults --------------------------------------------------------------------


def test_the_link_survives_a_broker_restart_and_republishes(demo, tmp_path):
    settings, store = demo
    broker = Mosquitto(tmp_path / "broker").start()
    watcher = None
    link = MqttLink(with_mqtt(settings, port=broker.port), store, clock=lambda: DEMO_NOW)
    try:
        link.start()
        watcher = Watcher(broker.port)
        watcher.wait_for(all_published(12))
        assert link.connected.is_set()

        broker.stop()  # no persistence: every retained message is gone with it
        deadline = time.monotonic() + 10
        while link.connected.is_set():
            assert time.monotonic() < deadline, "the link did not notice the broker going away"
            time.sleep(0.05)
        assert link.publish() is False  # a cycle meanwhile: nothing sent, no exception
        time.sleep(1.5)  # a few reconnect attempts against a closed port
        watcher.latest.clear()
        broker.start()

        # Reconnected with backoff; everything is published again, buttons work.
        watcher.wait_for(all_published(12), timeout=30)
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/availability") == "online")
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/vitality/state") not in (None, "None"))
        watcher.press(f"{BASE}/answer/ignore")
        deadline = time.monotonic() + 10
        while not feedback_rows(store):
            assert time.monotonic() < deadline, "the press after the restart was not stored"
            time.sleep(0.05)
        assert feedback_rows(store)[0].response == "ignored"
    finally:
        link.close()
        if watcher:
            watcher.close()
        broker.stop()


def test_home_assistant_restarting_gets_everything_again(demo, broker, watcher):
    settings, store = demo
    link = MqttLink(with_mqtt(settings, port=broker.port), store, clock=lambda: DEMO_NOW).start()
    try:
        watcher.wait_for(all_published(12))
        before = len(watcher.seen)
        watcher.press(f"{PREFIX}/status", "online")  # Home Assistant's birth message
        watcher.wait_for(
            lambda _: sum(t.endswith("/config") for t, _p in watcher.seen[before:]) >= 12
        )
    finally:
        link.close()


def test_a_killed_daemon_leaves_its_last_will(demo, broker, watcher, tmp_path):
    settings, _store = demo
    script = tmp_path / "link.py"
    script.write_text(
        "import sys, time\n"
        "from bridge.config import Settings\n"
        "from bridge.store import Store\n"
        "from bridge.out.mqtt.link import MqttLink\n"
        "s = Settings.model_validate_json(sys.argv[1])\n"
        "MqttLink(s, Store(s.database_url)).start()\n"
        "time.sleep(120)\n"
    )
    cfg = with_mqtt(settings, port=broker.port).model_dump_json()
    proc = subprocess.Popen([sys.executable, str(script), cfg], cwd=Path(__file__).parents[2])
    try:
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/answers/availability") == "online")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # The broker publishes the will for the dead connection: entities unavailable.
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/availability") == "offline")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_run_once_without_a_broker_fails_in_one_line_and_keeps_the_cycle(demo):
    settings, store = demo
    settings = with_mqtt(settings, port=free_port())
    with pytest.raises(MqttError, match=r"cannot reach the broker at mqtt://localhost:\d+"):
        publish_once(settings, store, timeout=5)
    assert store.get_meta(REMEMBERED) is None


# ---- turning it off -------------------------------------------------------------------


def test_turning_mqtt_off_removes_the_entities(demo, broker, watcher):
    settings, store = demo
    on = with_mqtt(settings, port=broker.port)
    ics = settings.sources.ics.model_copy(update={"enabled": True, "paths": []})
    with_ics = with_sources(on, ics=ics)
    link = MqttLink(with_ics, store, listen=False, clock=lambda: DEMO_NOW).connect(10)
    link.publish(timeout=10)
    link.close(offline=False)
    watcher.wait_for(all_published(19))
    assert f"{PREFIX}/binary_sensor/rhythm-bridge/source_ics/config" in watcher.latest

    # The source turned off: only its entity goes.
    assert publish_once(on, store, timeout=10).startswith("mqtt: published")
    watcher.wait_for(lambda latest: len(watcher.configs(PREFIX)) == 18)
    assert f"{PREFIX}/binary_sensor/rhythm-bridge/source_ics/config" not in watcher.latest

    # [mqtt] off (the section deleted: its defaults say another port) removes everything
    # from the broker that was used, once.
    message = publish_once(settings, store, timeout=10)
    assert (
        message
        == f"mqtt: removed the Home Assistant entities from mqtt://localhost:{broker.port} ([mqtt] is off)"
    )
    watcher.wait_for(
        lambda latest: not any(t.startswith(PREFIX) or t.startswith(BASE) for t in latest)
    )
    # Retained messages are really gone: a new subscriber gets none.
    fresh = Watcher(broker.port)
    try:
        time.sleep(0.5)
        assert fresh.latest == {}
    finally:
        fresh.close()
    assert not store.get_meta(REMEMBERED)
    assert publish_once(settings, store) is None and remove_entities(settings, store) is None


# ---- TLS, the password, the CLI, the daemon -------------------------------------------


# paho-mqtt 2.2 drops (does not close) its socket when the TLS handshake fails; Python
# closes it when collecting it, with a ResourceWarning that is not ours to fix.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_tls_with_a_custom_ca_and_the_password_from_the_keyring(demo, tmp_path, memory_keyring):
    from bridge.errors import ConfigError
    from bridge.out.mqtt.link import set_password

    settings, store = demo
    ca, cert, key = make_ca(tmp_path / "pki")
    broker = Mosquitto(
        tmp_path / "tls-broker", tls=(cert, key), passwords={"bridge": "s3cret-pass"}
    ).start()
    try:
        secure = with_mqtt(settings, port=broker.port, tls=True, ca_file=str(ca), username="bridge")
        with pytest.raises(MqttError, match="refused the connection: Not authorized"):
            publish_once(secure, store, timeout=10)  # no password stored yet
        set_password(secure, "s3cret-pass")
        assert publish_once(secure, store, timeout=10).startswith(
            f"mqtt: published 48 retained messages to mqtts://localhost:{broker.port}"
        )
        assert "s3cret" not in store.get_meta(REMEMBERED)
        assert json.loads(store.get_meta(REMEMBERED))["broker"]["tls"] is True

        other_ca = make_ca(tmp_path / "other-pki")[0]
        wrong = secure.model_copy(
            update={"mqtt": secure.mqtt.model_copy(update={"ca_file": str(other_ca)})}
        )
        with pytest.raises(
            MqttError, match=r"TLS with mqtts://localhost:\d+ failed: CERTIFICATE_VERIFY_FAILED"
        ):
            publish_once(wrong, store, timeout=10)
        plain = secure.model_copy(update={"mqtt": secure.mqtt.model_copy(update={"tls": False})})
        with pytest.raises(MqttError, match=r"did not answer within 5 s; .*mqtt.tls"):
            publish_once(plain, store, timeout=5)  # plain MQTT to a TLS port: no answer
        missing = secure.model_copy(
            update={"mqtt": secure.mqtt.model_copy(update={"ca_file": str(tmp_path / "no.pem")})}
        )
        with pytest.raises(ConfigError, match=r"mqtt.ca_file: .*no.pem does not exist"):
            publish_once(missing, store)
    finally:
        broker.stop()


def test_the_cli_stores_the_password_and_run_once_publishes(
    tmp_path, memory_keyring, broker, watcher
):
    from typer.testing import CliRunner

    from bridge.cli.main import app

    cli = CliRunner()
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
        mqtt=f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {broker.port}',
    )
    result = cli.invoke(app, ["--config", str(cfg), "mqtt-password"], input="pw-123456\n")
    assert result.exit_code == 0 and "pw-123456" not in result.output, result.output
    assert memory_keyring.get_password("rhythm-bridge", "mqtt-password") == "pw-123456"
    assert "[mqtt] username" in result.output  # the password alone is not used
    assert cli.invoke(app, ["--config", str(cfg), "mqtt-password", "--clear"]).exit_code == 0
    assert memory_keyring.get_password("rhythm-bridge", "mqtt-password") is None

    result = cli.invoke(app, ["--config", str(cfg), "run", "--once"])
    assert result.exit_code == 0, result.output
    assert (
        f"mqtt: published 51 retained messages to mqtt://127.0.0.1:{broker.port}" in result.output
    )
    watcher.wait_for(all_published(19))
    watcher.wait_for(lambda latest: latest.get(f"{BASE}/source_ics/state") == "OFF")
    broker.stop()
    result = cli.invoke(app, ["--config", str(cfg), "run", "--once"])
    # The cycle ran and was stored; the unreachable broker is one line and exit code 2.
    assert result.exit_code == 2 and "cycle done" in result.output
    assert (
        result.output.strip()
        .splitlines()[-1]
        .startswith(f"error: mqtt: cannot reach the broker at mqtt://127.0.0.1:{broker.port}: ")
    )


def test_the_daemon_publishes_a_real_cycle_answers_and_goes_offline_on_stop(
    tmp_path, broker, watcher
):
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
        mqtt=f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {broker.port}',
    )
    with cli_process(cfg, "run") as proc:
        wait_until(
            lambda: (
                watcher.latest.get(f"{BASE}/recommendation/state") not in (None, "None")
                and f"{BASE}/recommendation/attributes" in watcher.latest
            ),
            proc,
            timeout=90,
        )
        wait_until(lambda: watcher.latest.get(f"{BASE}/answers/availability") == "online", proc, 30)
        problems = [p for t, p in watcher.configs(PREFIX).items() for p in ha_problems(t, p)]
        assert problems == []
        rec = json.loads(watcher.latest[f"{BASE}/recommendation/attributes"])
        watcher.press(f"{BASE}/answer/accept")
        wait_until(
            lambda: (
                json.loads(watcher.latest[f"{BASE}/recommendation/attributes"])["response"]
                == "accepted"
            ),
            proc,
            30,
        )
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert f"recommendation {rec['id']} answered accepted" in output
    watcher.wait_for(lambda latest: latest.get(f"{BASE}/availability") == "offline")


@pytest.mark.parametrize(
    ("key", "value"),
    [("base_topic", "home/#"), ("discovery_prefix", "/homeassistant"), ("base_topic", "a//b")],
)
def test_a_bad_topic_in_the_config_is_one_line_naming_the_key(tmp_path, key, value):
    from bridge.config import load_settings
    from bridge.errors import ConfigError

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[mqtt]\n{key} = "{value}"\n')
    with pytest.raises(ConfigError, match=rf"c.toml: key 'mqtt.{key}': .* is not a topic prefix"):
        load_settings(cfg)


def test_the_daemon_starts_without_its_broker_and_publishes_once_it_is_up(tmp_path):
    port = free_port()
    cfg = write_config(
        tmp_path / "c.toml",
        tmp_path / "data",
        ics=f'[sources.ics]\nenabled = true\npaths = ["{SAMPLE / "calendar.ics"}"]',
        mqtt=f'[mqtt]\nenabled = true\nhost = "127.0.0.1"\nport = {port}',
    )
    snapshot = tmp_path / "data" / "latest.json"
    broker = Mosquitto(tmp_path / "late-broker", port)
    watcher = None
    try:
        with cli_process(cfg, "run") as proc:
            wait_until(snapshot.exists, proc, timeout=90)  # cycles go on without a broker
            broker.start()
            watcher = Watcher(port)
            wait_until(
                lambda: (
                    # 19 entities and the daemon's question select
                    len(watcher.configs(PREFIX)) == 20
                    and watcher.latest.get(f"{BASE}/answers/availability") == "online"
                ),
                proc,
                timeout=60,
            )
            proc.send_signal(signal.SIGTERM)
            output, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, output
        assert f"cannot reach mqtt://127.0.0.1:{port}; retrying with backoff" in output
        assert output.count("retrying with backoff") == 1  # later retries stay quiet
        assert f"connected to mqtt://127.0.0.1:{port}" in output
    finally:
        if watcher:
            watcher.close()
        broker.stop()


def test_a_full_calendar_reads_no_window_and_the_buttons_answer_nothing(
    settings, store, broker, watcher
):
    from bridge.cycle.recommend import recommend
    from tests.cycle.test_no_window import FULL, MONDAY_0505, NEXT_WINDOW, store_events

    store_events(store, FULL)
    recommend(store, settings, MONDAY_0505)
    settings = with_mqtt(settings, port=broker.port)
    link = MqttLink(settings, store, clock=lambda: MONDAY_0505, answer=page_answer(settings, store))
    link.start()
    try:
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/answers/availability") == "online")
        watcher.wait_for(lambda latest: f"{BASE}/belief_work/attributes" in latest)
        by_id = configs_by_id(watcher)
        component, config = by_id["rhythm-bridge_recommendation"]
        assert watcher.latest[config["state_topic"]] == "NO_WINDOW"
        assert state_problems(config, component, dict(watcher.latest)) == []
        attrs = json.loads(watcher.latest[config["json_attributes_topic"]])
        assert "no free window" in attrs["reason"]
        start = attrs["next_window"]["start"]
        assert start == NEXT_WINDOW[0].isoformat()
        watcher.press(by_id["rhythm-bridge_accept"][1]["command_topic"])
        time.sleep(0.5)
        assert feedback_rows(store) == []
        with store.session() as session:
            assert session.execute(select(Recommendation)).first() is None
    finally:
        link.close()


def test_checkins_from_home_assistant_number_entities(demo, broker, watcher):
    from bridge.store.models import CheckIn

    settings, store = demo
    link = MqttLink(with_mqtt(settings, port=broker.port), store, clock=lambda: DEMO_NOW)
    configs = link.current().configs
    number = json.loads(configs[link.topics.config("number", "checkin_energy")])
    assert number["command_topic"].endswith("/checkin/energy")
    assert (number["min"], number["max"], number["step"]) == (1, 5, 1)
    assert link.current().states[link.topics.state("checkin_energy")] == "None"  # unknown
    assert link.checkin("energy", "4") and link.checkin("energy", "5")  # the second replaces
    assert not link.checkin("energy", "9") and not link.checkin("vibes", "3")
    with store.session() as s:
        rows = [(r.item, r.value, r.source) for r in s.execute(select(CheckIn)).scalars()]
    assert rows == [("energy", 5.0, "mqtt")]
    assert link.current().states[link.topics.state("checkin_energy")] == "5"


def test_the_question_select_shows_the_best_title_and_its_choice_answers_the_group(
    demo, broker, watcher
):
    from bridge.cycle.questions import calendar_questions
    from bridge.out.mqtt.entities import UNANSWERED
    from bridge.store.models import CalendarEvent, ClassifierCorrection

    settings, store = demo
    settings = with_mqtt(settings, port=broker.port)
    with store.transaction() as session:
        for day in (-7, 0, 7):  # a weekly title nothing knows, one retitled with its time
            start = DEMO_NOW + timedelta(days=day, hours=-3)
            session.add(
                CalendarEvent(
                    source="ics",
                    calendar_id="/cal/me.ics",
                    uid="ploof",
                    recurrence_id=start.isoformat(),
                    title="Ploof 18:00" if day == 7 else "Ploof",
                    start_utc=start,
                    end_utc=start + timedelta(minutes=600),
                    content_hash=str(day),
                    updated_at=DEMO_NOW,
                )
            )
    link = MqttLink(settings, store, clock=lambda: DEMO_NOW).ask_with(
        lambda now: [q.as_dict() for q in calendar_questions(store, settings, now, 1)]
    )
    link.start()
    try:
        watcher.wait_for(lambda latest: latest.get(f"{BASE}/answers/availability") == "online")
        watcher.wait_for(lambda latest: f"{BASE}/question/attributes" in latest)
        by_id = configs_by_id(watcher)
        component, config = by_id["rhythm-bridge_question"]
        assert component == "select" and config["command_topic"] == f"{BASE}/question/set"
        problems = [p for t, p in watcher.configs(PREFIX).items() for p in ha_problems(t, p)]
        assert problems == []
        assert state_problems(config, component, dict(watcher.latest)) == []
        attrs = json.loads(watcher.latest[f"{BASE}/question/attributes"])
        assert (attrs["title"], attrs["occurrences"], attrs["minutes"]) == ("Ploof", 3, 1800)
        assert watcher.latest[f"{BASE}/question/state"] == UNANSWERED

        watcher.press(f"{BASE}/question/set", payload="Exercise")
        watcher.wait_for(
            lambda latest: (
                json.loads(latest.get(f"{BASE}/question/attributes", "{}")).get("title")
                not in ("Ploof", None)
                or not json.loads(latest.get(f"{BASE}/question/attributes", "{}")).get("question")
            )
        )
        with store.session() as session:
            fixes = session.execute(select(ClassifierCorrection)).scalars().all()
            labels = {
                e.title: (e.action, e.action_layer)
                for e in session.execute(
                    select(CalendarEvent).where(CalendarEvent.uid == "ploof")
                ).scalars()
            }
        assert [(f.title, f.action, f.channel) for f in fixes] == [("Ploof", "EXERCISE", "mqtt")]
        assert labels == {
            "Ploof": ("EXERCISE", "override"),
            "Ploof 18:00": ("EXERCISE", "override"),
        }
        # A choice that is no label, or with nothing shown, answers nothing.
        assert link.answer_question("Nap") is None
    finally:
        link.close()
