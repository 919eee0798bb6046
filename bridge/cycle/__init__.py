"""One cycle and its steps: sync due sources, classify new events, recompute the meter
slots whose inputs changed, recommend for the coming slot, announce, write the snapshot."""
