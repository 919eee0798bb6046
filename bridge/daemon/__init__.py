"""The long-running face: the scheduler that runs cycles, systemd notifications, the unit file."""
