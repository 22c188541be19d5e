"""The run index: its entries, list queries in `createdAt` windows, counts and tallies, its
version, retention, agents, and the claims decisions take."""
