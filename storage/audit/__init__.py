"""The audit log: a record of every decision asked, and the first answer to each
idempotency key."""
