"""The snapshot format: what Mastra and this server's Python runs write, and how
discovery reads it (extraction, the reduced read, the Python layout)."""
