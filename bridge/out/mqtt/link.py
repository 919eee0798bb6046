"""The MQTT connection: publish discovery and states, answer the buttons, clean up.

The daemon keeps one `MqttLink` connected: paho-mqtt's network thread reconnects with
exponential backoff (1 s doubling to 2 min) while the broker is down, and every
(re)connect publishes availability, every discovery config and every state again, so a
broker that restarted without persistence, or a Home Assistant that restarted (its birth
message on `<discovery_prefix>/status`), gets the whole picture back. `run --once`
connects, publishes, waits for the broker's acknowledgements and disconnects.

The broker password lives in the keyring (`rhythm-bridge mqtt-password`). What was
published last (topics and broker, never a secret) is remembered in the store's meta
table, so entities that are gone (a source turned off) or the whole device ([mqtt] turned
off) are removed with empty retained configs, as Home Assistant documents.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bridge.config import MqttSettings, Settings
from bridge.errors import BridgeError, ConfigError
from bridge.out.mqtt.entities import (
    ANSWERS,
    OFFLINE,
    ONLINE,
    UNANSWERED,
    Messages,
    Topics,
    messages,
)
from bridge.store import Store
from mappings.checkins import ASKED

log = logging.getLogger("rhythm_bridge.mqtt")

PASSWORD_KEYRING_USER = "mqtt-password"
REMEMBERED = "mqtt_published"  # meta key: what to remove once [mqtt] is turned off
CHANNEL = "mqtt"  # how answers from the buttons are stored (feedback.channel)
KEEPALIVE_SECONDS = 60
RECONNECT_MIN_SECONDS, RECONNECT_MAX_SECONDS = 1, 120


# (recommendation id, accept|ignore|reschedule, now, channel) -> (feedback, created, proposal)
AnswerFn = Callable[[int, str, datetime, str], tuple[Any, bool, Any]]
# now -> the calendar's questions, best first ({"title", "minutes", ...} each)
QuestionsFn = Callable[[datetime], list[dict[str, Any]]]


class MqttError(BridgeError):
    """The broker could not be reached, refused us, or did not acknowledge in time."""


@dataclass(frozen=True)
class Broker:
    """Where to connect; no secret in here (it is stored to find the broker again)."""

    host: str
    port: int
    username: str = ""
    tls: bool = False
    ca_file: str = ""

    @classmethod
    def from_settings(cls, cfg: MqttSettings) -> Broker:
        return cls(cfg.host, cfg.port, cfg.username, cfg.tls, cfg.ca_file)

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def topics_of(settings: Settings) -> Topics:
    """The topics of the person `settings` serve (in a household, their own device)."""
    from bridge.config import DEFAULT_PERSON

    person = "" if settings.person == DEFAULT_PERSON else settings.person
    return Topics(settings.mqtt.discovery_prefix, settings.mqtt.base_topic, person)


def set_password(settings: Settings, password: str | None) -> None:
    """Keep (or with None, forget) the broker password in the keyring."""
    from bridge.auth.secrets import Secrets

    Secrets.from_settings(settings).put(PASSWORD_KEYRING_USER, password)


def _password(settings: Settings, broker: Broker) -> str | None:
    if not broker.username:
        return None
    from bridge.auth.secrets import Secrets

    return Secrets.from_settings(settings).get(PASSWORD_KEYRING_USER)


def _tls_context(broker: Broker) -> ssl.SSLContext:
    ca = Path(broker.ca_file).expanduser() if broker.ca_file else None
    if ca is not None and not ca.is_file():
        raise ConfigError(f"mqtt.ca_file: {ca} does not exist; point it at the broker CA's PEM")
    try:
        return ssl.create_default_context(cafile=str(ca) if ca else None)
    except (ssl.SSLError, ValueError) as err:
        raise ConfigError(f"mqtt.ca_file: {ca} is not a PEM certificate file ({err})") from None


def _remembered(store: Store) -> dict[str, Any] | None:
    raw = store.get_meta(REMEMBERED)
    if not raw:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _remember(store: Store, doc: dict[str, Any] | None) -> None:
    with store.transaction() as session:
        store.set_meta(session, REMEMBERED, json.dumps(doc, sort_keys=True) if doc else "")


class MqttLink:
    """One connection to the broker; `listen` subscribes to the buttons (the daemon does)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        listen: bool = True,
        broker: Broker | None = None,
        topics: Topics | None = None,
        clock: Any = None,
        announce: bool = True,
        answer: AnswerFn | None = None,
    ) -> None:
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion

        self.settings, self.store, self.listen = settings, store, listen
        self.announce = announce  # False: only here to remove what was published
        # The daemon passes the cycle's `answer` (a Reschedule also proposes the next free
        # window, as on the page); without it the answer alone is recorded.
        self._answer = answer
        self._questions: QuestionsFn | None = None  # see ask_with
        self._asked: str | None = None  # the title the select shows now
        self.broker = broker or Broker.from_settings(settings.mqtt)
        self.topics = topics or topics_of(settings)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.connected = threading.Event()
        self._answered = threading.Event()  # the broker's CONNACK, good or bad
        self.refused: str | None = None
        self._publish_lock = threading.Lock()
        self._stopping = False
        self._failures = 0
        role = "daemon" if listen else "once"
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"rhythm-bridge-{self.topics.node}-{role}",
            protocol=paho.MQTTv311,
        )
        if self.broker.username:
            self.client.username_pw_set(self.broker.username, _password(settings, self.broker))
        if self.broker.tls:
            self.client.tls_set_context(_tls_context(self.broker))
        # A crash or a lost network leaves every entity "unavailable", not frozen.
        self.client.will_set(self.topics.availability, OFFLINE, qos=1, retain=True)
        self.client.reconnect_delay_set(RECONNECT_MIN_SECONDS, RECONNECT_MAX_SECONDS)
        self.client.on_connect = self._on_connect
        self.client.on_connect_fail = self._on_connect_fail
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message

    # ---- connecting -------------------------------------------------------------------

    def ask_with(self, questions: QuestionsFn) -> MqttLink:
        """Publish the question select too: the daemon passes the calendar's question list
        (bridge.cycle.questions); the select shows the best one and its choice answers it."""
        self._questions = questions
        return self

    def start(self) -> MqttLink:
        """Connect in the background; retried with backoff until the broker answers."""
        self.client.connect_async(self.broker.host, self.broker.port, KEEPALIVE_SECONDS)
        self.client.loop_start()
        log.info("mqtt: connecting to %s", self.broker)
        return self

    def connect(self, timeout: float) -> MqttLink:
        """Connect now or raise MqttError saying why (for `run --once`)."""
        try:
            self.client.connect(self.broker.host, self.broker.port, KEEPALIVE_SECONDS)
        except ssl.SSLError as err:
            raise MqttError(
                f"mqtt: TLS with {self.broker} failed: {err.reason or err}; check mqtt.ca_file "
                "and that the broker's certificate names mqtt.host"
            ) from None
        except OSError as err:
            raise MqttError(
                f"mqtt: cannot reach the broker at {self.broker}: {err.strerror or err}; "
                "check mqtt.host and mqtt.port and that the broker runs"
            ) from None
        self.client.loop_start()
        self._answered.wait(timeout)
        if not self.connected.is_set():
            self.close(offline=False)
            if self.refused is None:
                raise MqttError(
                    f"mqtt: {self.broker} did not answer within {timeout:.0f} s; check that "
                    "it speaks MQTT on that port (and mqtt.tls: TLS brokers usually use 8883)"
                )
            hint = (
                "; check mqtt.username and `rhythm-bridge mqtt-password`"
                if "authori" in self.refused.lower()
                else ""
            )
            raise MqttError(
                f"mqtt: the broker at {self.broker} refused the connection: {self.refused}{hint}"
            )
        return self

    def close(self, *, offline: bool = True, timeout: float = 5.0) -> None:
        """Say offline (entities go unavailable), disconnect and stop the network thread."""
        self._stopping = True
        if offline and self.connected.is_set():
            infos = [self.client.publish(self.topics.availability, OFFLINE, qos=1, retain=True)]
            if self.listen:
                infos.append(
                    self.client.publish(self.topics.listening, OFFLINE, qos=1, retain=True)
                )
            _wait(infos, timeout)
        self.client.disconnect()
        self.client.loop_stop()

    # ---- publishing -------------------------------------------------------------------

    def current(self) -> Messages:
        """Every discovery config and state as of now, read from the store."""
        from bridge.clock import current_slot
        from bridge.out.snapshot import (
            current_recommendation,
            no_window_document,
            slot_documents,
        )
        from bridge.out.status import collect_status

        now = self.clock()
        cur = current_slot(self.settings, now)
        slots = slot_documents(self.store, cur.local_date, cur)
        slot = next((s for s in slots if s["slot"] == cur.slot), None)
        rec = current_recommendation(self.store, self.settings, now)
        gap = None if rec else no_window_document(self.store, self.settings, now)
        status = collect_status(self.settings, self.store, now)
        said = self._said(cur)
        if self._questions is None:
            return messages(self.topics, slot, rec, status, gap, said=said)
        found = self._questions(now)
        question = found[0] if found else None
        self._asked = question["title"] if question else None
        return messages(self.topics, slot, rec, status, gap, ask=True, question=question, said=said)

    def _said(self, cur: Any) -> dict[str, float]:
        from sqlmodel import col, select

        from bridge.store.models import CheckIn

        with self.store.session() as session:
            rows = session.execute(
                select(col(CheckIn.item), col(CheckIn.value)).where(
                    CheckIn.local_date == cur.local_date, CheckIn.slot == cur.slot
                )
            ).all()
        return {str(item): float(value) for item, value in rows}

    def publish(self, timeout: float | None = None) -> bool:
        """Publish everything (retained); False when not connected (done on connect then).

        With `timeout`, wait until the broker acknowledged every message (QoS 1).
        """
        if not self.connected.is_set():
            return False
        with self._publish_lock:
            msgs = self.current()
            wanted = {**msgs.configs, **msgs.states}
            before = _remembered(self.store) or {}
            # An entity that is gone (a source turned off): an empty retained config
            # removes it from Home Assistant, an empty retained state clears the broker.
            gone = sorted(set(before.get("topics", [])) - set(wanted))
            infos = [self.client.publish(t, b"", qos=1, retain=True) for t in gone]
            infos += [
                self.client.publish(topic, payload, qos=1, retain=True)
                for topic, payload in wanted.items()
            ]
            if timeout is not None and not _wait(infos, timeout):
                raise MqttError(
                    f"mqtt: the broker at {self.broker} did not acknowledge "
                    f"{sum(not i.is_published() for i in infos)} messages within {timeout:.0f} s"
                )
            _remember(
                self.store,
                {
                    "broker": asdict(self.broker),
                    "discovery_prefix": self.topics.discovery_prefix,
                    "base_topic": self.topics.base,
                    "topics": sorted(wanted),
                },
            )
        log.info("mqtt: published %d entities to %s", len(msgs.configs), self.broker)
        return True

    # ---- the buttons ------------------------------------------------------------------

    def answer(self, kind: str, payload: str = "PRESS") -> tuple[Any, bool] | None:
        """Answer like the page's buttons: the current recommendation, or the id pressed.

        Returns (feedback, created) or None when there is nothing to answer.
        """
        from bridge.learning.feedback import UnknownRecommendation, record_feedback
        from bridge.out.snapshot import current_recommendation

        now = self.clock()

        if payload.isdigit():
            rec_id = int(payload)
        elif payload in ("", "PRESS"):
            rec = current_recommendation(self.store, self.settings, now)
            if rec is None:
                log.warning("mqtt: %s pressed, but there is no recommendation to answer", kind)
                return None
            rec_id = rec["id"]
        else:
            log.warning("mqtt: %s: payload %r is neither PRESS nor an id", kind, payload[:40])
            return None
        try:
            if self._answer is not None:
                fb, created, _proposal = self._answer(rec_id, kind, now, CHANNEL)
            else:
                fb, created = record_feedback(self.store, rec_id, kind, CHANNEL)
        except UnknownRecommendation as err:
            log.warning("mqtt: %s: %s", kind, err)
            return None
        if created:
            log.info("mqtt: recommendation %d answered %s", rec_id, fb.response)
            self.publish()
        else:
            log.info("mqtt: recommendation %d was already answered %s", rec_id, fb.response)
        return fb, created

    def checkin(self, item: str, payload: str) -> bool:
        """Store a check-in sent by Home Assistant's number entity (1-5); False when the
        item or the value is not one (logged, nothing stored)."""
        from bridge.errors import InputError
        from bridge.intake.checkins import parse_answers, record_checkins

        try:
            answers = parse_answers([f"{item}={payload}"])
        except InputError as err:
            log.warning("mqtt: check-in: %s", err)
            return False
        s = self.settings
        record_checkins(self.store, answers, self.clock(), s.tz, s.boundaries, source=CHANNEL)
        log.info("mqtt: check-in %s %s", item, payload)
        self.publish()
        return True

    def answer_question(self, choice: str) -> dict[str, Any] | None:
        """The select's choice: label the shown title's whole group, then show the next."""
        from bridge.learning.corrections import add_correction, relabel_answered
        from bridge.out.mqtt.entities import QUESTION_CHOICES

        action = QUESTION_CHOICES.get(choice)
        if action is None or self._asked is None:
            if choice != UNANSWERED:
                log.warning("mqtt: question: %r is not an answer to a shown question", choice[:40])
            return None
        fix = add_correction(self.store, self._asked, action, channel=CHANNEL)
        relabelled = relabel_answered(self.store, fix)
        log.info("mqtt: %r answered %s (%d events relabelled)", self._asked, action, relabelled)
        done = {"title": self._asked, "action": action, "relabelled": relabelled}
        self.publish()
        return done

    # ---- paho callbacks (its network thread) -----------------------------------------

    def _on_connect(self, client: Any, _userdata: Any, _flags: Any, reason: Any, _props: Any):
        if reason.is_failure:
            self.refused = str(reason)
            log.error("mqtt: %s refused the connection: %s", self.broker, reason)
            self._answered.set()
            return
        self._failures = 0
        self.refused = None
        log.info("mqtt: connected to %s", self.broker)
        if self.listen:
            client.subscribe([(self.topics.ha_status, 1)])
            client.subscribe([(self.topics.answer(kind), 1) for kind in ANSWERS])
            client.subscribe([(self.topics.checkin(item), 1) for item in ASKED])
            if self._questions is not None:
                client.subscribe([(self.topics.question_set, 1)])
        if self.announce:
            client.publish(self.topics.availability, ONLINE, qos=1, retain=True)
            client.publish(self.topics.listening, ONLINE if self.listen else OFFLINE, 1, True)
        self.connected.set()
        self._answered.set()
        if not self.listen:
            return  # `run --once` and the clean-up publish what they need themselves
        try:
            self.publish()
        except Exception:
            log.exception("mqtt: publishing after connecting failed; retried after the next cycle")

    def _on_connect_fail(self, _client: Any, _userdata: Any) -> None:
        self._failures += 1
        # The first failure is news; the retries after it (every 2 min at most) are not.
        level = logging.WARNING if self._failures == 1 else logging.DEBUG
        log.log(level, "mqtt: cannot reach %s; retrying with backoff", self.broker)

    def _on_disconnect(self, _client: Any, _userdata: Any, _flags: Any, reason: Any, _p: Any):
        was_connected = self.connected.is_set()
        self.connected.clear()
        if not self.listen or self._stopping:
            return
        if was_connected:
            self._failures = 0
            log.warning("mqtt: lost %s (%s); reconnecting with backoff", self.broker, reason)
        else:  # an attempt that failed half-way (a timeout): as quiet as one that failed early
            self._on_connect_fail(_client, _userdata)

    def _on_message(self, _client: Any, _userdata: Any, msg: Any) -> None:
        try:
            if msg.topic == self.topics.ha_status:
                if msg.payload == ONLINE.encode():  # Home Assistant (re)started
                    self.publish()
                return
            if msg.topic == self.topics.question_set and self._questions is not None:
                if msg.retain:
                    log.warning("mqtt: ignored a retained message on %s", msg.topic)
                    return
                self.answer_question(msg.payload.decode("utf-8", "replace").strip())
                return
            kind = msg.topic.rsplit("/", 1)[-1]
            if kind in ASKED and msg.topic == self.topics.checkin(kind) and not msg.retain:
                self.checkin(kind, msg.payload.decode("utf-8", "replace").strip())
                return
            if kind not in ANSWERS or msg.topic != self.topics.answer(kind):
                return
            if msg.retain:
                # A press is a moment; a retained one would answer every future connect.
                log.warning("mqtt: ignored a retained message on %s", msg.topic)
                return
            self.answer(kind, msg.payload.decode("utf-8", "replace").strip())
        except Exception:
            log.exception("mqtt: handling %s failed", msg.topic)


def _wait(infos: list[Any], timeout: float) -> bool:
    import time

    deadline = time.monotonic() + timeout
    for info in infos:
        left = deadline - time.monotonic()
        if left <= 0:
            return all(i.is_published() for i in infos)
        try:
            info.wait_for_publish(left)
        except (RuntimeError, ValueError):
            return False
    return all(i.is_published() for i in infos)


def publish_once(settings: Settings, store: Store, timeout: float = 15.0) -> str | None:
    """`run --once`: publish everything and disconnect; or, with [mqtt] off, clean up.

    Returns a line for the person, None when MQTT was never used.
    """
    if not settings.mqtt.enabled:
        return remove_entities(settings, store, timeout)
    link = MqttLink(settings, store, listen=False).connect(timeout)
    try:
        link.publish(timeout)
        count = len(_remembered(store)["topics"])  # type: ignore[index]
    finally:
        link.close(offline=False)
    return f"mqtt: published {count} retained messages to {link.broker}"


def remove_entities(settings: Settings, store: Store, timeout: float = 15.0) -> str | None:
    """[mqtt] is off but entities were published: remove them from the broker it used."""
    before = _remembered(store)
    if not before:
        return None
    broker = Broker(**before["broker"])
    topics = Topics(before["discovery_prefix"], before["base_topic"])
    link = MqttLink(
        settings, store, listen=False, broker=broker, topics=topics, announce=False
    ).connect(timeout)
    try:
        clear = [*before["topics"], topics.availability, topics.listening]
        infos = [link.client.publish(t, b"", qos=1, retain=True) for t in clear]
        if not _wait(infos, timeout):
            raise MqttError(f"mqtt: {broker} did not acknowledge the removal; tried again next run")
    finally:
        link.close(offline=False)
    _remember(store, None)
    return f"mqtt: removed the Home Assistant entities from {broker} ([mqtt] is off)"
