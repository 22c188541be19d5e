"""The follower: keeps the run index in step with the snapshots (lease, reconcile,
catch-up, change stream or polling, settling runs whose answer was lost)."""
