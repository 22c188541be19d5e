"""Events for webhooks: the outbox that steps write, the webhooks, and their deliveries."""
