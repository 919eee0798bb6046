"""MQTT: a full publish (store read + every retained message acknowledged) and a button
press until the answer is stored, against a bare paho publish of the same messages, all
against Debian's mosquitto on 127.0.0.1 in the same run.

    .venv/bin/python benchmarks/mqtt_publish.py [--port 56210] [--rounds 50]

The baseline publishes the very payloads of one full publish with QoS 1 and waits for
the acknowledgements, so the ratio is what reading the store and building the documents
costs on top of the network.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.config import MqttSettings
from bridge.cycle.demo import demo_settings, run_demo
from bridge.sample_data.generate import DEMO_NOW
from bridge.store import Store
from tests.mqtt_broker import Mosquitto, Watcher


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=56210)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()

    from bridge.cycle.answer import answer
    from bridge.out.mqtt.link import _wait

    work = Path(tempfile.mkdtemp(prefix="rb-mqtt-bench-"))
    broker = Mosquitto(work / "broker", args.port).start()
    try:
        run_demo(work / "data")
        settings = demo_settings(work / "data")
        settings = settings.model_copy(
            update={"mqtt": MqttSettings(enabled=True, host="127.0.0.1", port=args.port)}
        )
        store = Store(settings.database_url)
        link = connected_link(settings, store, answer)
        msgs = link.current()
        payloads = {**msgs.configs, **msgs.states}

        full, bare = [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            link.publish(timeout=10)
            full.append(time.perf_counter() - start)
            start = time.perf_counter()
            infos = [link.client.publish(t, p, qos=1, retain=True) for t, p in payloads.items()]
            assert _wait(infos, 10)
            bare.append(time.perf_counter() - start)

        # Press -> stored -> republished, measured as Home Assistant sees it.
        watcher = Watcher(args.port, (f"{settings.mqtt.base_topic}/recommendation/attributes",))
        presses = []
        try:
            from sqlalchemy import delete

            from bridge.store.models import Feedback

            topic = f"{settings.mqtt.base_topic}/recommendation/attributes"
            for _ in range(min(args.rounds, 20)):
                with store.transaction() as session:
                    session.execute(delete(Feedback))
                link.publish(timeout=10)
                watcher.wait_for(lambda latest: '"response": null' in latest.get(topic, ""))
                start = time.perf_counter()
                watcher.press(f"{settings.mqtt.base_topic}/answer/accept")
                watcher.wait_for(lambda latest: '"response": "accepted"' in latest.get(topic, ""))
                presses.append(time.perf_counter() - start)
        finally:
            watcher.close()
            link.close()
            store.dispose()

        n = len(payloads)
        f50, b50 = statistics.median(full) * 1000, statistics.median(bare) * 1000
        print(f"messages per publish: {n} ({len(msgs.configs)} entities), {args.rounds} rounds")
        print(f"bare paho publish, QoS 1 acked:   p50 {b50:7.2f} ms  ({n / b50 * 1000:,.0f} msg/s)")
        print(
            f"full publish (store + documents): p50 {f50:7.2f} ms  ({n / f50 * 1000:,.0f} msg/s)"
            f"  = {f50 / b50:.1f}x the bare publish"
        )
        p50 = statistics.median(presses) * 1000
        print(
            f"button press -> answer stored -> state republished: p50 {p50:.1f} ms, "
            f"max {max(presses) * 1000:.1f} ms ({len(presses)} presses)"
        )
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def connected_link(settings, store, answer):
    from bridge.out.mqtt.link import MqttLink

    link = MqttLink(
        settings,
        store,
        clock=lambda: DEMO_NOW,
        answer=lambda rec_id, response, now, channel: answer(
            store, settings, rec_id, response, now, channel
        ),
    ).start()
    deadline = time.monotonic() + 10
    while not link.connected.is_set():
        assert time.monotonic() < deadline, "no connection to the benchmark broker"
        time.sleep(0.02)
    return link


if __name__ == "__main__":
    main()
