"""Simulated people for training and evaluating runners (RhythmEnv-style)."""
