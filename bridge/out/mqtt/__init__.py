"""Home Assistant over MQTT: discovery configs and states out, button presses in.

`entities.py` says what is published (pure: documents in, topics and payloads out);
`link.py` holds the connection (paho-mqtt), answers the buttons and removes the entities
when [mqtt] is turned off.
"""
