"""Learning from the person's answers: explicit and implicit feedback, label corrections,
the answered history the runners read, the weekly adapter refit, fine-tuning data."""
