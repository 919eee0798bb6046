"""A real broker (Debian's mosquitto on 127.0.0.1) and a Home Assistant stand-in for tests.

`ha_problems` checks a discovery message against Home Assistant's documented rules
(https://www.home-assistant.io/integrations/mqtt/ "MQTT Discovery", and the sensor.mqtt,
binary_sensor.mqtt and button.mqtt pages), written from those pages, not from our code:
the topic must match Home Assistant's TOPIC_MATCHER, an entity joins a device only with a
unique_id, a device needs identifiers, unknown keys are dropped silently (so a typo loses
a feature without an error: we flag them), enum sensors take no state class or unit,
sensors cannot be in the "config" category, a button needs a command topic.
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"

TOPIC_MATCHER = re.compile(
    r"^(?P<prefix>[^#+]+)/(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?"
    r"(?P<object_id>[a-zA-Z0-9_-]+)/config$"
)
COMMON_KEYS = {
    "name", "unique_id", "device", "origin", "availability", "availability_mode",
    "availability_topic", "availability_template", "payload_available",
    "payload_not_available", "json_attributes_topic", "json_attributes_template", "icon",
    "entity_category", "enabled_by_default", "qos", "encoding", "object_id",
    "default_entity_id", "entity_picture", "platform",
}  # fmt: skip
COMPONENT_KEYS = {
    "sensor": {
        "state_topic", "value_template", "unit_of_measurement", "state_class", "device_class",
        "suggested_display_precision", "options", "expire_after", "force_update",
        "last_reset_value_template",
    },
    "binary_sensor": {
        "state_topic", "value_template", "payload_on", "payload_off", "device_class",
        "expire_after", "force_update", "off_delay",
    },
    "button": {"command_topic", "command_template", "payload_press", "device_class", "retain"},
    "number": {
        "command_topic", "command_template", "state_topic", "value_template", "min", "max",
        "step", "mode", "unit_of_measurement", "device_class", "payload_reset", "retain",
        "optimistic",
    },
    "select": {
        "command_topic", "command_template", "state_topic", "value_template", "options",
        "optimistic", "retain",
    },
}  # fmt: skip
STATE_CLASSES = {"measurement", "total", "total_increasing"}
BINARY_DEVICE_CLASSES = {
    "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door",
    "garage_door", "gas", "heat", "light", "lock", "moisture", "motion", "moving",
    "occupancy", "opening", "plug", "power", "presence", "problem", "running", "safety",
    "smoke", "sound", "tamper", "update", "vibration", "window",
}  # fmt: skip
DEVICE_KEYS = {
    "configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model",
    "model_id", "name", "serial_number", "suggested_area", "sw_version", "via_device",
}  # fmt: skip


def _bad_topic(value: Any) -> bool:
    return not isinstance(value, str) or not value or "+" in value or "#" in value


def ha_problems(topic: str, payload: str) -> list[str]:
    """Why Home Assistant would reject or misread this discovery message ([] if it would not)."""
    found = TOPIC_MATCHER.match(topic)
    if not found:
        return [f"{topic}: not <prefix>/<component>/[<node_id>/]<object_id>/config"]
    component = found["component"]
    if component not in COMPONENT_KEYS:
        return [f"{topic}: component {component} not checked here"]
    try:
        config = json.loads(payload)
    except ValueError:
        return [f"{topic}: payload is not JSON"]
    if not isinstance(config, dict):
        return [f"{topic}: payload is not a JSON object"]
    problems = [
        *_entity_problems(config, component),
        *_availability_problems(config),
        *_field_problems(config, component),
        *_COMPONENT_PROBLEMS.get(component, lambda _config: [])(config),
    ]
    return [f"{topic}: {p}" for p in problems]


def _entity_problems(config: dict[str, Any], component: str) -> list[str]:
    problems = []
    unknown = set(config) - COMMON_KEYS - COMPONENT_KEYS[component]
    if unknown:
        problems.append(f"keys Home Assistant drops: {sorted(unknown)}")
    if not isinstance(config.get("unique_id"), str) or not config["unique_id"]:
        problems.append("no unique_id (the entity cannot join a device)")
    dev = config.get("device")
    if not isinstance(dev, dict) or not (dev.get("identifiers") or dev.get("connections")):
        problems.append("device without identifiers or connections")
    elif set(dev) - DEVICE_KEYS:
        problems.append(f"unknown device keys {sorted(set(dev) - DEVICE_KEYS)}")
    if "origin" in config and not config["origin"].get("name"):
        problems.append("origin without a name")
    return problems


def _availability_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if "availability" in config and "availability_topic" in config:
        problems.append("availability and availability_topic together")
    for item in config.get("availability", []):
        if _bad_topic(item.get("topic")):
            problems.append("availability entry without a valid topic")
    if config.get("availability_mode", "latest") not in ("all", "any", "latest"):
        problems.append(f"availability_mode {config['availability_mode']!r}")
    return problems


def _field_problems(config: dict[str, Any], component: str) -> list[str]:
    problems = []
    category = config.get("entity_category")
    if category not in (None, "config", "diagnostic"):
        problems.append(f"entity_category {category!r}")
    if component in ("sensor", "binary_sensor") and category == "config":
        problems.append("a sensor cannot be in the config category")
    if config.get("qos", 0) not in (0, 1, 2):
        problems.append(f"qos {config['qos']!r}")
    for key, value in config.items():
        if key.endswith("_topic") and _bad_topic(value):
            problems.append(f"{key} is not a topic one can publish to")
    if component in ("sensor", "binary_sensor") and "state_topic" not in config:
        problems.append("no state_topic")
    return problems


def _sensor_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if "state_class" in config and config["state_class"] not in STATE_CLASSES:
        problems.append(f"state_class {config['state_class']!r}")
    if config.get("device_class") == "enum":
        if not config.get("options"):
            problems.append("enum sensor without options")
        if "state_class" in config or "unit_of_measurement" in config:
            problems.append("enum sensor with a state class or unit")
    elif "options" in config:
        problems.append("options without device_class enum")
    return problems


def _binary_sensor_problems(config: dict[str, Any]) -> list[str]:
    if config.get("device_class") not in (None, *BINARY_DEVICE_CLASSES):
        return [f"binary_sensor device_class {config['device_class']!r}"]
    return []


def _button_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if "command_topic" not in config:
        problems.append("a button without command_topic")
    if "state_topic" in config:
        problems.append("a button has no state")
    return problems


def _number_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if "command_topic" not in config:
        problems.append("a number without command_topic")
    if not config.get("min", 1) < config.get("max", 100):
        problems.append("min must be below max")
    if config.get("step", 1) <= 0:
        problems.append("step must be positive")
    if config.get("mode", "auto") not in ("auto", "box", "slider"):
        problems.append(f"mode {config['mode']!r} is not auto, box or slider")
    return problems


def _select_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if "command_topic" not in config:
        problems.append("a select without command_topic")
    options = config.get("options")
    if not isinstance(options, list) or not options or len(set(options)) != len(options):
        problems.append("a select needs a non-empty list of distinct options")
    return problems


# What only one component's config can get wrong.
_COMPONENT_PROBLEMS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "number": _number_problems,
    "sensor": _sensor_problems,
    "binary_sensor": _binary_sensor_problems,
    "button": _button_problems,
    "select": _select_problems,
}


def state_problems(config: dict[str, Any], component: str, retained: dict[str, str]) -> list[str]:
    """Would Home Assistant show the retained state and attributes the way they are meant?"""
    name = config["unique_id"]
    problems = []
    if component == "button":
        return problems
    state = retained.get(config["state_topic"])
    if state is None:
        return [f"{name}: nothing retained on {config['state_topic']}"]
    if component == "sensor":
        if config.get("device_class") == "enum":
            if state not in [*config["options"], "None"]:
                problems.append(f"{name}: {state!r} is not one of its options")
        elif "state_class" in config and state != "None":
            try:
                float(state)
            except ValueError:
                problems.append(f"{name}: {state!r} is not a number")
    if component == "number" and state != config.get("payload_reset", "None"):
        try:
            float(state)
        except ValueError:
            problems.append(f"{name}: {state!r} is not a number")
    if component == "select" and state not in config["options"]:
        problems.append(f"{name}: {state!r} is not one of its options")
    if component == "binary_sensor" and state not in (
        config.get("payload_on", "ON"),
        config.get("payload_off", "OFF"),
        "None",
    ):
        problems.append(f"{name}: {state!r} is neither payload_on nor payload_off")
    attrs = retained.get(config.get("json_attributes_topic", ""), "{}")
    if not isinstance(json.loads(attrs), dict):
        problems.append(f"{name}: attributes are not a JSON object")
    return problems


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mosquitto:
    """mosquitto on 127.0.0.1 with this test's config; stop() and start() again at will."""

    def __init__(
        self,
        folder: Path,
        port: int | None = None,
        *,
        tls: tuple[Path, Path] | None = None,
        passwords: dict[str, str] | None = None,
    ) -> None:
        self.folder, self.port = folder, port or free_port()
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            f"user {getpass.getuser()}",
            "persistence false",
            f"log_dest file {folder / 'mosquitto.log'}",
            "log_type all",
            f"listener {self.port} 127.0.0.1",
        ]
        if tls:
            lines += [f"certfile {tls[0]}", f"keyfile {tls[1]}"]
        if passwords:
            pw = folder / "passwords"
            pw.touch(mode=0o600)
            for user, password in passwords.items():
                subprocess.run(
                    ["mosquitto_passwd", "-b", str(pw), user, password],
                    check=True,
                    capture_output=True,
                )
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        self.conf = folder / "mosquitto.conf"
        self.conf.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Mosquitto:
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise RuntimeError(f"mosquitto did not start: {err}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None


class Watcher:
    """A subscriber that keeps the latest payload of every topic (retained or live)."""

    def __init__(self, port: int, topics: tuple[str, ...] = ("#",), **tls: Any) -> None:
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion

        self.latest: dict[str, str] = {}
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.RLock()
        self._subscribed = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id="test-watcher")
        self.client.on_connect = lambda c, *_: c.subscribe([(t, 1) for t in topics])
        self.client.on_subscribe = lambda *_: self._subscribed.set()
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(0.2, 0.5)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert self._subscribed.wait(10), "the watcher could not subscribe"

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        with self._lock:
            text = msg.payload.decode()
            self.seen.append((msg.topic, text))
            if text:
                self.latest[msg.topic] = text
            else:
                self.latest.pop(msg.topic, None)

    def wait_for(self, predicate: Callable[[dict[str, str]], bool], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if predicate(dict(self.latest)):
                    return
            assert time.monotonic() < deadline, f"timed out; have {sorted(self.latest)}"
            time.sleep(0.05)

    def configs(self, prefix: str = "homeassistant") -> dict[str, str]:
        with self._lock:
            return {t: p for t, p in self.latest.items() if t.startswith(prefix + "/")}

    def press(self, topic: str, payload: str = "PRESS", retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def make_ca(folder: Path, host: str = "localhost") -> tuple[Path, Path, Path]:
    """A fresh CA and a server certificate it signed for `host` and 127.0.0.1 (PEM files)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("test CA"))
        .issuer_name(name("test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(host))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(host), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths[2].chmod(0o600)
    return paths
