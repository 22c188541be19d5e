"""Webhooks: events posted to the URLs people gave, signed, at least once."""
