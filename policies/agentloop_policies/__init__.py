"""Ready-made policies for agentloop's four policy slots and approval hook."""
